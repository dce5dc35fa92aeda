"""moto's server for icekeeper's second-opinion tests (make moto-test).

It is moto's own `moto_server` (moto/server.py: DomainDispatcherApplication
over werkzeug's run_simple, threaded) with one difference: each request is
handled under one lock. moto's backends take no lock around a conditional
write's check and its write, so its server lets two racing conditional
writes on one item both succeed (icekeeper's lease test saw two winners).
DynamoDB evaluates a condition and applies the write as one atomic
operation ("Condition expressions", Amazon DynamoDB Developer Guide:
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html),
and handling requests in turn gives the same guarantee. Connections stay
concurrent: a client holding one open does not stop the others.

Usage: python serve.py HOST PORT
"""

import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple


class OneAtATime:
    """A WSGI application that runs the wrapped one a request at a time,
    its response body read whole under the lock."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            body = self.app(environ, start_response)
            try:
                return [b"".join(body)]
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    run_simple(host, port, OneAtATime(DomainDispatcherApplication(create_backend_app)), threaded=True)


if __name__ == "__main__":
    main()
