"""The front page's picture (docs/images/feedback-page.png): a student's feedback page, as a browser shows it.

    .venv/bin/python tests/front_page_picture.py [IMAGE]      # or: make picture

One student of the bundled sample class (``dan_buggy.py``, the softmax taken over the
queries) is graded by the batch in a temporary folder, and the feedback page it writes,
``feedback/dan_buggy.html``, is photographed with Debian's ``chromium`` (tests/browser.py)
at a laptop's width. The picture is committed so that GitHub shows it on the front page;
this script is how it is made again after the feedback pages change.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests import browser, sample_class  # noqa: E402

STUDENT = "dan_buggy"
DEFAULT_IMAGE = REPO_ROOT / "docs" / "images" / "feedback-page.png"


def photograph(page_path: Path, image: Path) -> None:
    """The page's top (the score, the diagnosis, the first attention picture), at a laptop's width."""
    with browser.browser() as chromium:
        page = chromium.new_page(viewport={"width": 1000, "height": 1240})
        page.goto(page_path.resolve().as_uri(), wait_until="load")
        page.screenshot(path=str(image), full_page=False)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    image = Path(argv[0]) if argv else DEFAULT_IMAGE
    if not browser.available():
        print("the picture needs Playwright and Debian's chromium (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="front-page-picture-") as work:
        submissions = Path(work) / "submissions"
        submissions.mkdir()
        (submissions / f"{STUDENT}.py").write_text(sample_class.buggy_source(), encoding="utf-8")
        out = Path(work) / "out"
        subprocess.run([sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--jobs", "1"],
                       cwd=REPO_ROOT, check=True, stdout=subprocess.DEVNULL)
        image.parent.mkdir(parents=True, exist_ok=True)
        photograph(out / "feedback" / f"{STUDENT}.html", image)
    print(f"picture: {image}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
