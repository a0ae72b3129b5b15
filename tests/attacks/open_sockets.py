# ATTACK: talk to the network at import: a TCP connection and a UDP datagram to a port the
# test listens on (127.0.0.1:@PORT@), and TCP connections to outside addresses. Each
# connection made prints a "BREACH network:" line. The solution is otherwise untouched: honest 100.
import socket as _socket

_PORT = int("@PORT@")
for _address in (("127.0.0.1", _PORT), ("1.1.1.1", 53), ("8.8.8.8", 53), ("93.184.216.34", 80)):
    try:
        with _socket.create_connection(_address, timeout=0.5):
            print(f"BREACH network: connected to {_address}")
    except OSError as _error:  # anything else (an import failing, say) is not a network answer: let it fail
        print(f"socket refused: {_address} {type(_error).__name__} {_error}")
try:
    with _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM) as _datagram:
        _datagram.sendto(b"@MARKER@", ("127.0.0.1", _PORT))  # only the listener can tell whether it arrived
except OSError:
    pass
