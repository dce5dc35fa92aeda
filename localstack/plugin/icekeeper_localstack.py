"""icekeeper's two plugins for LocalStack's own server run in host mode
(``python -m localstack.runtime.main``, no Docker). See ../README.md.

1. ``icekeeper-rie``, a Lambda runtime executor. LocalStack runs every Lambda
   function in a Docker container (its only executor, ``docker``:
   localstack/services/lambda_/invocation/docker_runtime_executor.py); with
   no Docker engine a function's version goes to state ``Failed`` ("Error
   while creating lambda: Installation of lambda-runtime ... failed", then
   "Docker not available ... but required to run Lambda functions"), so
   CloudFormation cannot create it. Executors are plugins
   (namespace ``localstack.lambda.runtime_executor``, chosen by
   ``LAMBDA_RUNTIME_EXECUTOR``: localstack/services/lambda_/invocation/
   runtime_executor.py, ``get_runtime_executor``). This one starts the
   function's own code, the ``bootstrap`` LocalStack unzipped from the
   deployed package, under AWS's Lambda Runtime Interface Emulator
   (``aws-lambda-rie``, the binary of AWS's base images; its path in
   ``ICEKEEPER_RIE``) as a host process, with the environment LocalStack
   computed for the function (execution_environment.py,
   ``get_environment_variables``: the function's variables, credentials of
   its role, ``AWS_ENDPOINT_URL`` pointing back at LocalStack), and hands it
   each invocation LocalStack's Lambda service makes (Invoke, EventBridge
   targets, SQS event source mappings) on the emulator's endpoint
   ``POST /2015-03-31/functions/function/invocations``. Everything around
   the process (versions, states, event invoke configs, destinations,
   retries, the event source mappings' pollers, the logs in CloudWatch Logs)
   is LocalStack's own Lambda service.

2. ``dynamodb:icekeeper-moto``, a DynamoDB provider. LocalStack's DynamoDB
   providers (``default``, ``v2``) forward every call to DynamoDB Local, a
   Java server it downloads on first use (localstack/services/dynamodb/
   packages.py) with a Java 21 runtime (from GitHub); neither can be
   downloaded here, and DynamoDB Local's licence rules it out anyway. This
   provider implements nothing itself and lets LocalStack's moto fallback
   (localstack/services/moto.py, ``MotoFallbackDispatcher``, as LocalStack's
   own EC2 provider uses) answer every operation with moto's DynamoDB, in
   LocalStack's process. Chosen with ``PROVIDER_OVERRIDE_DYNAMODB=icekeeper-moto``.
"""

import logging
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import requests

from localstack.services.lambda_.invocation.lambda_models import FunctionVersion, InvocationResult
from localstack.services.lambda_.invocation.plugins import RuntimeExecutorPlugin
from localstack.services.lambda_.invocation.runtime_executor import RuntimeExecutor
from localstack.services.plugins import Service, aws_provider

LOG = logging.getLogger(__name__)

# The emulator's invocation path (README of
# github.com/aws/aws-lambda-runtime-interface-emulator).
RIE_INVOKE_PATH = "/2015-03-31/functions/function/invocations"

HOST_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}.get(
    platform.machine().lower(), platform.machine().lower()
)


def _rie_path() -> str:
    path = os.environ.get("ICEKEEPER_RIE", "")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(
            f"icekeeper-rie: ICEKEEPER_RIE={path!r} is not an executable aws-lambda-rie"
        )
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RieRuntimeExecutor(RuntimeExecutor):
    """One execution environment: one aws-lambda-rie process running the
    function's bootstrap. LocalStack gives an environment one invocation at
    a time (execution_environment.py), as the emulator takes them."""

    def __init__(self, id: str, function_version: FunctionVersion) -> None:
        super().__init__(id, function_version)
        self.process: subprocess.Popen | None = None
        self.invoke_port = 0
        self.tmp = ""
        self.log_path = ""
        self.log_offset = 0
        self.lock = threading.Lock()

    def start(self, env_vars: dict[str, str]) -> None:
        code = self.function_version.config.code.get_unzipped_code_location()
        bootstrap = os.path.join(str(code), "bootstrap")
        self.tmp = tempfile.mkdtemp(prefix=f"icekeeper-rie-{self.id}-")
        self.log_path = os.path.join(self.tmp, "output.log")
        api_port, self.invoke_port = _free_port(), _free_port()
        env = {k: str(v) for k, v in env_vars.items()}
        # A host process, not a container: its /tmp is a directory of its
        # own, and PATH and HOME are the host's.
        env.update(
            {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": self.tmp,
                "TMPDIR": self.tmp,
            }
        )
        cmd = [
            _rie_path(),
            "--runtime-api-address",
            f"127.0.0.1:{api_port}",
            "--runtime-interface-emulator-address",
            f"127.0.0.1:{self.invoke_port}",
            bootstrap,
        ]
        LOG.info("icekeeper-rie: starting %s for %s", bootstrap, self.function_version.qualified_arn)
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            cmd, env=env, cwd=str(code), stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.invoke_port), timeout=1):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"icekeeper-rie: the emulator for {bootstrap} did not listen: {self._read_logs()}"
                    )
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def get_address(self) -> str:
        return "127.0.0.1"

    def get_endpoint_from_executor(self) -> str:
        # The function reaches LocalStack's gateway on the host, where the
        # emulator runs (AWS_ENDPOINT_URL is built from this).
        return "127.0.0.1"

    def get_runtime_endpoint(self) -> str:
        # LocalStack's own init calls back here; the AWS emulator does not.
        return ""

    def _read_logs(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.log_offset)
                data = f.read()
                self.log_offset += len(data)
                return data.decode("utf-8", "replace")
        except OSError:
            return ""

    def invoke(self, payload: dict[str, str]) -> InvocationResult:
        # payload is what LocalStack sends its own init
        # (execution_environment.py, ``invoke``): invoke-id, the event as
        # "payload", invoked-function-arn, trace-id.
        timeout = int(self.function_version.config.timeout) + 5
        with self.lock:
            resp = requests.post(
                f"http://127.0.0.1:{self.invoke_port}{RIE_INVOKE_PATH}",
                data=payload["payload"].encode(),
                headers={"X-Amzn-Trace-Id": payload.get("trace-id", "")},
                timeout=timeout,
                proxies={"http": "", "https": ""},
            )
            # The emulator answers a function error with 200 and an
            # {"errorMessage", "errorType"} body (and X-Amz-Function-Error
            # on newer versions).
            is_error = bool(resp.headers.get("X-Amz-Function-Error")) or (
                resp.content.startswith(b"{") and b'"errorType"' in resp.content
            )
            time.sleep(0.05)  # let the process flush what it logged
            logs = self._read_logs()
        return InvocationResult(
            request_id=payload["invoke-id"], payload=resp.content, is_error=is_error, logs=logs
        )

    def get_logs(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    @classmethod
    def prepare_version(cls, function_version: FunctionVersion) -> None:
        _rie_path()
        arch = function_version.config.architectures[0]
        if arch != HOST_ARCH:
            raise RuntimeError(
                f"icekeeper-rie: function architecture {arch}, host {HOST_ARCH}: "
                "deploy with architecture matching this machine"
            )
        if function_version.config.code:
            function_version.config.code.prepare_for_execution()
            bootstrap = os.path.join(
                str(function_version.config.code.get_unzipped_code_location()), "bootstrap"
            )
            if not os.access(bootstrap, os.X_OK):
                raise RuntimeError(f"icekeeper-rie: no executable bootstrap at {bootstrap}")

    @classmethod
    def cleanup_version(cls, function_version: FunctionVersion) -> None:
        pass

    @classmethod
    def validate_environment(cls) -> bool:
        try:
            _rie_path()
            return True
        except RuntimeError as e:
            LOG.warning("%s", e)
            return False


class RieRuntimeExecutorPlugin(RuntimeExecutorPlugin):
    name = "icekeeper-rie"

    def load(self, *args, **kwargs):
        return RieRuntimeExecutor


@aws_provider(api="dynamodb", name="icekeeper-moto")
def dynamodb_moto():
    from localstack.aws.api.dynamodb import DynamodbApi
    from localstack.services.moto import MotoFallbackDispatcher

    class MotoDynamoDBProvider(DynamodbApi):
        """Implements nothing: every operation falls through to moto."""

    return Service.for_provider(MotoDynamoDBProvider(), dispatch_table_factory=MotoFallbackDispatcher)
