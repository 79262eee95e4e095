"""`benchkit` with this process's clock moved: `python3 tests/skewed.py SECONDS ARGS...`
runs `benchkit ARGS...` with time.time() and datetime.now() SECONDS off (negative:
behind), as on a machine whose clock is wrong; the host's clock is untouched."""

import datetime as dt
import sys
import time

offset = float(sys.argv[1])
real = time.time
time.time = lambda: real() + offset  # type: ignore[assignment]


class Skewed(dt.datetime):
    @classmethod
    def now(cls, tz=None):  # type: ignore[override]
        return dt.datetime.fromtimestamp(time.time(), tz)


dt.datetime = Skewed  # type: ignore[misc]  # before benchkit binds `datetime` on import

from benchkit.cli import main  # noqa: E402

sys.argv = ["benchkit", *sys.argv[2:]]
main()
