"""Settings for the whole test run."""

from __future__ import annotations

import signal

# Tests that interrupt gradcli send it SIGINT. A shell that starts the test run in the
# background (`pytest &`, nohup) ignores SIGINT, and an ignored signal stays ignored in every
# child process, so those tests would see a gradcli that rightly ignores Ctrl-C. A handler set
# here is reset to the default in each child that the tests start.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
