"""guidellm's mock server (an OpenAI-compatible streaming server written elsewhere), told its
timing, for `triage probe` to measure. Run by crates/cli/tests/integration/interop.rs:

    python guidellm_mock.py PORT TTFT_MS ITL_MS OUTPUT_TOKENS LIFETIME_S

It binds 127.0.0.1 only and stops by itself: after LIFETIME_S, or as soon as its standard input
closes (the test that started it is gone).
"""

import os
import sys
import threading

from guidellm.mock_server import MockServer
from guidellm.schemas.mock_server import MockServerConfig


def stop_when(seconds):
    def watch_stdin():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    timer = threading.Timer(seconds, lambda: os._exit(0))
    timer.daemon = True
    timer.start()


def main(port, ttft_ms, itl_ms, tokens, lifetime_s):
    stop_when(float(lifetime_s))
    config = MockServerConfig(
        host="127.0.0.1",
        port=int(port),
        model="mock",
        ttft_ms=float(ttft_ms),
        ttft_ms_std=0.0,
        itl_ms=float(itl_ms),
        itl_ms_std=0.0,
        output_tokens=int(tokens),
        output_tokens_std=0.0,
    )
    MockServer(config).run(access_log=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
