"""The names Moodle gives files in an assignment's "Download all submissions" zip, read.

Moodle writes them in ``mod/assign/classes/downloader.php`` (moodle/moodle, read at commit
da5455238d1a24a0246b11f4b682b73664993c0b; before Moodle 4.1 the same code was in
``mod/assign/locallib.php``, ``download_submissions``):

    get_student_prefix:  $prefix = str_replace('_', ' ', fullname($student));
                         clean_filename($prefix . '_' . $manager->get_uniqueid_for_user($student->id))
                         ("Participant" instead of the name when submissions are anonymous)
    "Download submissions in folders" on (the default, the user preference assign_downloadasfolders):
                         clean_filename($prefix . '_' . $subtype . '_' . $type) . $file->get_filepath() . $filename
                         -> "Jane Doe_2931512_assignsubmission_file/multi_head_attention.py"
                         (before Moodle 4.1 the folder ended in "_": "..._assignsubmission_file_/")
    off:                 clean_filename($prefix . '_' . $subtype . '_' . $type . '_' . $filename)
                         -> "Jane Doe_2931512_assignsubmission_file_multi_head_attention.py"

The number is the participant id (``assign::get_uniqueid_for_user``, the assign_user_mapping
table): the same number the grading worksheet's ``Identifier`` column carries ("Participant
2931512") and the one Moodle's feedback-files import finds a student by
(grader/lms/moodle_feedback.py). A student's name holds no ``_`` (Moodle replaced each by a
space), so the first ``_<digits>_assignsubmission_`` ends it.

``clean_filename`` is ``clean_param($string, PARAM_FILE)`` (lib/moodlelib.php; the rule itself in
lib/classes/param.php, ``clean_param_value_file``, in Moodle 4.4 and later):
``preg_replace('~[[:cntrl:]]|[&<>"`\\|\\':\\\\/]~u', '', $param)``: control characters and
``& < > " ` | ' : \\ /`` are dropped, so "Aoife O'Connell" is "Aoife OConnell" in the zip while the
worksheet keeps her apostrophe (``name_in_files``).

Both download settings give one student's files one entry: a flat file is put, as it is
unpacked, in the folder the other setting would have made (``as_folder``), so a student's several
files are one student and the file that holds the work is found in that folder by its content
(grader/batch/intake.py).

Not handled: group submissions (``teamsubmission``), whose prefix is the group's name and id, not
a participant's; such a zip is graded per group folder, each matching no worksheet row.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

PLUGIN_FILE = "assignsubmission_file"  # the file-submission plugin: $subtype . '_' . $type
# get_student_prefix's name under blind marking: get_string('participant', 'mod_assign'), the
# worksheet then hiding the name too; the participant id alone says who it is.
BLIND_NAME = "Participant"

# name: anything up to the last "_<digits>_assignsubmission_<type>" (lazy: Moodle's names hold no
# "_"; a site that prefixes the username keeps it in the name); file: the rest after one "_" (flat
# download), nothing (a folder), or "" (a folder before Moodle 4.1, "..._file_").
_MOODLE_NAME = re.compile(
    r"^(?P<name>.*?)_(?P<user>\d+)_(?P<plugin>assignsubmission_[a-z0-9]+)(?:_(?P<file>.*))?\Z", re.DOTALL
)


@dataclass(frozen=True)
class MoodleName:
    """One entry of Moodle's download, read: the fields the identity resolver reads of an LMS's
    file name (grader/term/identity.py), as Canvas's reading has them."""

    name: str  # the student's full name as the zip writes it ("Aoife OConnell"), or "Participant"
    user_id: str  # the participant id ("2931512")
    plugin: str  # "assignsubmission_file", "assignsubmission_onlinetext"
    file: str  # the file's name in a flat download; "" for a folder
    late: bool = False  # Moodle's names carry no late marker: the worksheet's times say it
    attachment_id: str = ""  # nor any order of uploads: Moodle's download holds the latest submission only

    def agrees_with(self, name_in_files: str) -> bool:
        """Whether this entry's name part is a worksheet row's name as the zip writes it
        (``name_in_files``): the same, case and spaces aside; with a site's username prefix in
        front ("jdoe_Jane Doe": a student's own name holds no ``_``); or Moodle's blind-marked
        "Participant", which names no one and leaves the participant id to say who."""
        mine, theirs = " ".join(self.name.split()).casefold(), " ".join(unicodedata.normalize("NFC", name_in_files).split()).casefold()
        return mine in (theirs, BLIND_NAME.casefold()) or mine.endswith("_" + theirs)

    @property
    def file_name(self) -> str:
        """What tells this entry apart from the same student's others: the plugin and the file."""
        return f"{self.plugin}_{self.file}" if self.file else self.plugin

    @property
    def folder(self) -> str:
        """The folder Moodle's "download submissions in folders" gives this student's files."""
        return f"{self.name}_{self.user_id}_{self.plugin}"


def parse_moodle_name(name: str) -> MoodleName | None:
    """``name`` (an entry's name or stem) read as Moodle's download writes it, or None."""
    match = _MOODLE_NAME.match(unicodedata.normalize("NFC", name))
    if match is None:
        return None
    return MoodleName(match["name"], match["user"], match["plugin"], match["file"] or "")


def is_submission_folder(name: str) -> bool:
    """A folder Moodle's download made for one student's files of one plugin: the files in it are
    all that student's, and the one holding the work is found by content."""
    reading = parse_moodle_name(name)
    return reading is not None and not reading.file


def as_folder(parts: tuple[str, ...]) -> tuple[str, ...]:
    """A zip member's path as the folders setting would have written it: a flat
    ``Name_id_assignsubmission_file_x.py`` becomes ``Name_id_assignsubmission_file/x.py``, a
    pre-4.1 folder ``..._file_/`` loses its ``_``; anything else is left as it is."""
    reading = parse_moodle_name(parts[0]) if parts else None
    if reading is None:
        return parts
    if len(parts) == 1:
        return (reading.folder, reading.file) if reading.file else parts
    return (reading.folder, *parts[1:]) if parts[0] == reading.folder + "_" else parts


def name_in_files(full_name: str) -> str:
    """A worksheet's full name as the zip writes it: ``_`` made a space (get_student_prefix),
    then ``clean_filename``'s characters dropped (see the module's docstring)."""
    spaced = unicodedata.normalize("NFC", full_name).replace("_", " ")
    kept = "".join(char for char in spaced if unicodedata.category(char) != "Cc" and char not in "&<>\"`|':\\/")
    return "" if kept in (".", "..") else kept
