#!/usr/bin/python3
"""The Envoy door spoken to by a second gRPC implementation (Python grpcio).

Stubs are generated from proto/ into a temporary directory with grpc_tools.protoc, so this
client shares nothing with the C++ server but the .proto files: if the field numbers or the
service path were wrong, these calls would fail.

Usage: python_client_test.py --server BINARY --proto-dir DIR --config-dir DIR
  BINARY is anything that takes a Sluice YAML with an `envoy_rls` section and prints
  "listening rls=HOST:PORT" (sluice_rls_test_server, or `sluice serve` with --serve).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message, file=sys.stderr)


def generate_stubs(proto_dir, out_dir):
    from grpc_tools import protoc

    os.makedirs(out_dir)
    protos = [
        "envoy/config/core/v3/base.proto",
        "envoy/type/v3/ratelimit_unit.proto",
        "envoy/extensions/common/ratelimit/v3/ratelimit.proto",
        "envoy/service/ratelimit/v3/rls.proto",
    ]
    includes = ["-I" + proto_dir]
    # The well-known types (duration, wrappers, ...): from grpc_tools if it bundles them,
    # else from the system's protobuf headers.
    bundled = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    for candidate in (bundled, "/usr/include"):
        if os.path.exists(os.path.join(candidate, "google/protobuf/duration.proto")):
            includes.append("-I" + candidate)
            break
    status = protoc.main(
        ["protoc"] + includes + ["--python_out=" + out_dir, "--grpc_python_out=" + out_dir] + protos
    )
    if status != 0:
        raise SystemExit("protoc failed with status %d" % status)
    sys.path.insert(0, out_dir)


def start_redis(work):
    """A real redis-server on a free loopback port, for the shared-store runs."""
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", work],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):  # bounded: 10 s
        ping = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True)
        if ping.stdout.strip() == "PONG":
            return process, port
        time.sleep(0.05)
    process.kill()
    raise SystemExit("redis-server did not start")


def start_server(binary, args, work, config_dir, extra_yaml, store_yaml=""):
    config = os.path.join(work, "sluice.yaml")
    with open(config, "w") as out:
        out.write(
            store_yaml +
            # No limits: an Envoy-only deployment keeps them all in the lyft files.
            "server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }\n"
            "envoy_rls:\n  listen: 127.0.0.1:0\n  config_dir: %s\n%s" % (config_dir, extra_yaml)
        )
    log = open(os.path.join(work, "server.out"), "w+")
    process = subprocess.Popen([binary] + args + [config], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):  # bounded: 10 s
        log.seek(0)
        text = log.read()
        found = re.search(r"rls=127\.0\.0\.1:(\d+)", text)
        if found:
            admin = re.search(r"admin=127\.0\.0\.1:(\d+)", text)  # `sluice serve` only
            return process, int(found.group(1)), int(admin.group(1)) if admin else None
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    log.seek(0)
    raise SystemExit("the server did not start: " + log.read())


def stop_server(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        check(False, "the server did not stop on SIGTERM")


def wait_out_minute_turn():
    """The checks below count against lyft's windows, which turn with the clock's minute (and
    hour): a turn between two calls would give the second a fresh window. They take under a
    second and a half, also in a sanitizer build: in a minute's last 8 s, wait for the next one."""
    into_minute = time.time() % 60
    if into_minute > 52:
        time.sleep(60 - into_minute + 0.5)


def run_checks(port):
    import grpc
    from envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
    from envoy.extensions.common.ratelimit.v3 import ratelimit_pb2
    from envoy.type.v3 import ratelimit_unit_pb2

    Response = rls_pb2.RateLimitResponse
    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    stub = rls_pb2_grpc.RateLimitServiceStub(channel)

    def descriptor(*entries, hits=None, limit=None):
        d = ratelimit_pb2.RateLimitDescriptor(
            entries=[ratelimit_pb2.RateLimitDescriptor.Entry(key=k, value=v) for k, v in entries]
        )
        if hits is not None:
            d.hits_addend.value = hits
        if limit is not None:
            d.limit.requests_per_unit, d.limit.unit = limit
        return d

    def ask(*descriptors, domain="envoy", hits_addend=0):
        request = rls_pb2.RateLimitRequest(
            domain=domain, descriptors=list(descriptors), hits_addend=hits_addend
        )
        return stub.ShouldRateLimit(request, timeout=10)

    def error_of(*descriptors, domain="envoy"):
        try:
            ask(*descriptors, domain=domain)
        except grpc.RpcError as error:
            return error.code(), error.details()
        return None, None

    # Statuses, the current limit and the reset, then OVER_LIMIT past 3/min.
    wait_out_minute_turn()
    address = descriptor(("remote_address", "198.51.100.7"))
    first = ask(address)
    check(first.overall_code == Response.OK, "first call is OK")
    status = first.statuses[0]
    check(status.current_limit.requests_per_unit == 3, "current_limit is 3")
    check(status.current_limit.unit == Response.RateLimit.MINUTE, "unit is MINUTE")
    check(status.limit_remaining == 2, "2 remaining, got %d" % status.limit_remaining)
    check(0 < status.duration_until_reset.ToMicroseconds() <= 60_000_000, "reset within a minute")
    headers = {h.key: h.value for h in first.response_headers_to_add}
    check(headers.get("X-RateLimit-Limit") == "3", "X-RateLimit-Limit header: %r" % headers)
    check(headers.get("X-RateLimit-Remaining") == "2", "X-RateLimit-Remaining header")
    ask(address)
    ask(address)
    over = ask(address)
    check(over.overall_code == Response.OVER_LIMIT, "fourth call is OVER_LIMIT")
    check(over.statuses[0].code == Response.OVER_LIMIT, "status OVER_LIMIT")
    check("Retry-After" in {h.key for h in over.response_headers_to_add}, "Retry-After on OVER_LIMIT")

    # hits_addend: request level, and a descriptor's own (a UInt64Value) overriding it.
    user = ("remote_address", "198.51.100.8")
    check(ask(descriptor(user), hits_addend=2).statuses[0].limit_remaining == 1, "request hits_addend")
    check(
        ask(descriptor(user, hits=0), hits_addend=5).statuses[0].limit_remaining == 1,
        "descriptor hits_addend 0 only checks",
    )
    check(ask(descriptor(user, hits=1), hits_addend=9).overall_code == Response.OK, "descriptor hits_addend wins")

    # Nested descriptors, exact value before key-only, wildcards.
    nested = ask(descriptor(("destination_cluster", "backend"), ("header_match", "post")))
    check(nested.statuses[0].current_limit.name == "backend-post", "nested rule and its name")
    check(nested.statuses[0].current_limit.unit == Response.RateLimit.HOUR, "nested unit HOUR")
    vip = ask(descriptor(("generic_key", "vip")))
    check(not vip.statuses[0].HasField("current_limit"), "exact value: unlimited has no limit")
    check(vip.statuses[0].limit_remaining == 4294967295, "unlimited remaining is max uint32")
    check(ask(descriptor(("generic_key", "x"))).statuses[0].current_limit.requests_per_unit == 2, "key-only")
    check(ask(descriptor(("user", "premium-1"))).statuses[0].current_limit.requests_per_unit == 10, "wildcard")

    # Shadow mode: counted, reported OK.
    shadow = descriptor(("shadow_key", "py"))
    ask(shadow)
    shadowed = ask(shadow)
    check(shadowed.overall_code == Response.OK, "shadow rule never denies")
    check(shadowed.statuses[0].limit_remaining == 0, "shadow rule is counted")

    # replaces: the daily tenant rule gives way to the burst rule.
    both = ask(descriptor(("tenant", "py")), descriptor(("tenant_burst", "py")))
    check(not both.statuses[0].HasField("current_limit"), "replaced rule does not apply")
    check(both.statuses[1].current_limit.name == "tenant-burst", "replacing rule applies")

    # A limit override carried in the request.
    override = descriptor(("anything", "py"), limit=(1, ratelimit_unit_pb2.HOUR))
    check(ask(override).statuses[0].current_limit.requests_per_unit == 1, "override limit used")
    check(ask(override).overall_code == Response.OVER_LIMIT, "override limit enforced")

    # Bad requests are gRPC errors with a message.
    code, details = error_of(address, domain="")
    check(code == grpc.StatusCode.INVALID_ARGUMENT and "domain" in details, "empty domain: %s" % code)
    code, details = error_of()
    check(code == grpc.StatusCode.INVALID_ARGUMENT and "descriptor" in details, "no descriptors: %s" % code)
    code, details = error_of(address, domain="missing")
    check(code == grpc.StatusCode.NOT_FOUND and "missing" in details, "unknown domain: %s" % code)
    code, _ = error_of(descriptor(("a", "b"), limit=(1, 0)))
    check(code == grpc.StatusCode.INVALID_ARGUMENT, "override with UNKNOWN unit: %s" % code)
    channel.close()


def run_reload_checks(port, admin_port, config_dir, work):
    """POST /admin/reload picks up the lyft files as SIGHUP does (the watcher is off here), and
    a broken file is refused with its name while the old config keeps serving. An edit to the
    envoy_rls section itself is not applied, and the log says it takes effect at restart."""
    import grpc
    import urllib.error
    import urllib.request
    from envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
    from envoy.extensions.common.ratelimit.v3 import ratelimit_pb2

    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    stub = rls_pb2_grpc.RateLimitServiceStub(channel)

    def code_of_reloaded_domain():
        entry = ratelimit_pb2.RateLimitDescriptor.Entry(key="k", value="v")
        request = rls_pb2.RateLimitRequest(
            domain="reloaded", descriptors=[ratelimit_pb2.RateLimitDescriptor(entries=[entry])]
        )
        try:
            stub.ShouldRateLimit(request, timeout=10)
            return grpc.StatusCode.OK
        except grpc.RpcError as error:
            return error.code()

    def admin_reload():
        request = urllib.request.Request("http://127.0.0.1:%d/admin/reload" % admin_port,
                                         data=b"", method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    check(code_of_reloaded_domain() == grpc.StatusCode.NOT_FOUND, "domain 'reloaded' before the file")
    with open(os.path.join(config_dir, "reloaded.yaml"), "w") as out:
        out.write("domain: reloaded\ndescriptors:\n  - key: k\n"
                  "    rate_limit: { unit: minute, requests_per_unit: 5 }\n")
    status, body = admin_reload()
    check(status == 200, "admin reload with a new lyft file: %d %s" % (status, body))
    check(code_of_reloaded_domain() == grpc.StatusCode.OK, "domain 'reloaded' after the admin reload")
    with open(os.path.join(config_dir, "broken.yaml"), "w") as out:
        out.write("domain: broken\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight }\n")
    status, body = admin_reload()
    check(status == 422 and "broken.yaml" in body, "admin reload with a broken lyft file: %d %s" % (status, body))
    check(code_of_reloaded_domain() == grpc.StatusCode.OK, "the old config keeps serving after a refused reload")
    os.remove(os.path.join(config_dir, "broken.yaml"))
    with open(os.path.join(work, "sluice.yaml"), "a") as out:
        out.write("  shadow_mode: true\n")  # the file ends inside the envoy_rls section
    status, body = admin_reload()
    check(status == 200, "admin reload after an envoy_rls edit: %d %s" % (status, body))
    warned = False
    for _ in range(100):  # bounded: 5 s for the line to reach the file
        with open(os.path.join(work, "server.out")) as log:
            warned = "take effect at restart" in log.read()
        if warned:
            break
        time.sleep(0.05)
    check(warned, "a reload that finds envoy_rls edited warns that it takes effect at restart")
    channel.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--server-args", default="", help="arguments before the config path, e.g. 'serve --config'")
    parser.add_argument("--proto-dir", required=True)
    parser.add_argument("--config-dir", required=True)
    parser.add_argument("--store", default="memory", choices=["memory", "redis", "synced"],
                        help="redis and synced start a real redis-server for the run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        generate_stubs(args.proto_dir, os.path.join(work, "stubs"))
        redis, store_yaml = None, ""
        if args.store != "memory":
            redis, redis_port = start_redis(work)
            # The checks expect exact answers: the longest deadline keeps a loaded machine (a
            # sanitizer build on two cores) from turning a slow reply into a degraded denial.
            # A synced node decides alone when Redis fails: on_error is not its setting.
            on_error = "on_error: deny, " if args.store == "redis" else ""
            store_yaml = ("store: { type: %s, address: 127.0.0.1:%d, %stimeout: 1s }\n"
                          % (args.store, redis_port, on_error))
        try:
            # A copy, which the reload checks add files to; the watcher is off so that what
            # picks the files up is the admin reload.
            config_dir = os.path.join(work, "lyft")
            shutil.copytree(os.path.abspath(args.config_dir), config_dir)
            process, port, admin_port = start_server(
                args.server, args.server_args.split(), work, config_dir,
                "  response_headers: true\n  watch_interval: 0\n", store_yaml,
            )
            try:
                run_checks(port)
                if admin_port is not None:
                    run_reload_checks(port, admin_port, config_dir, work)
            finally:
                stop_server(process)
        finally:
            if redis is not None:
                redis.kill()
                redis.wait()
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES), file=sys.stderr)
        return 1
    print("Python gRPC client: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
