"""A vendor that echoes the request, key and all: nothing of the key is kept anywhere.

A live SerpApi key is sent as a query parameter (`api_key`). One with `+`, `/` and `=` goes on the
wire in a form of the transport's own (aiohttp escapes `+` and `=` and leaves `/` as it is), which
no list of whole encodings (as sent, `quote`, `quote_plus`) holds. The vendor here is a local
echo server standing in for SerpApi over a real socket: it answers a third of the queries, and
the preflight's, with an error quoting the request exactly as it arrived (the bytes that left the
process), in a JSON body, a plain-text body and a header; the others with a documented answer.

The snapshot then goes its whole way as a live one (fetch, scores, review packets, publication
after the review period, and `bench preflight --json`), and every store is searched for every
form the key took: the warehouse, the partition archive, preflight.duckdb, the custody journal,
the review packets, Dagster's event and compute logs, the published site and the preflight
report. SerpApi's terms allow digests only (its `publish_evidence`), so its error bodies are not
published either: the row pages say so instead of quoting the vendor.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
import zipfile
from urllib.parse import parse_qs, quote, quote_plus, unquote, urlsplit

import dagster as dg
import pytest
import yaml

from bench_assets.cli.main import main
from bench_assets.defs.resources import vendor_keys_from_env
from bench_assets.fetch.preflight import DEFAULT_QUERY
from bench_assets.split.leaks import parquet_readings
from bench_assets_tests.e2e.test_secrets import all_text_in_duckdb, send_packets_dated_back
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    assets,
    make_home,
    register_partitions,
    vendor_key,
)
from bench_assets_tests.helpers import resources as bench_resources

KEY = "serpapi+PLANTED/5e8a=0b6c/Qz"  # characters URL encoders disagree on
ECHO_MARK = "Invalid API key"


class EchoVendor:
    """SerpApi's search endpoint as a raw HTTP/1.1 server on 127.0.0.1, echoing what it received."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        assert ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._answer, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/search"

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
                request = head + (await reader.readexactly(int(length.group(1))) if length else b"")
                self.received.append(request)
                writer.write(self._response(request))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @staticmethod
    def _response(request: bytes) -> bytes:
        line = request.split(b"\r\n", 1)[0].decode("latin-1")
        query = parse_qs(urlsplit(line.split(" ")[1]).query)
        text = query.get("q", [""])[0]
        echoed = request.decode("latin-1")
        if text == DEFAULT_QUERY or int(hashlib.sha256(text.encode()).hexdigest(), 16) % 3 == 0:
            if text == DEFAULT_QUERY or len(text) % 2:
                status, kind, body = (
                    "401 Unauthorized",
                    "application/json",
                    json.dumps({"error": f"{ECHO_MARK}. Request: {echoed}"}),
                )
            else:
                status, kind, body = "400 Bad Request", "text/plain", f"{ECHO_MARK}; we received:\n{echoed}"
            extra = f"X-Echo: {line}\r\n"
        else:
            status, kind, extra = "200 OK", "application/json", ""
            body = json.dumps(
                {
                    "search_metadata": {"id": hashlib.md5(text.encode()).hexdigest(), "status": "Success"},
                    "search_parameters": {"engine": "google", "q": text},
                    "organic_results": [{"position": 1, "link": "https://example.org/echo", "title": "Echo"}],
                }
            )
        data = body.encode()
        head = f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(data)}\r\n{extra}\r\n"
        return head.encode() + data

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture()
def echo_vendor():
    vendor = EchoVendor()
    yield vendor
    vendor.stop()


def wire_forms(received: list[bytes]) -> set[str]:
    """Every form of `api_key` as the requests carried it on the wire."""
    forms = set()
    for request in received:
        target = request.split(b"\r\n", 1)[0].decode("latin-1").split(" ")[1]
        for pair in urlsplit(target).query.split("&"):
            name, _, value = pair.partition("=")
            if name == "api_key":
                forms.add(value)
    return forms


def test_a_key_echoed_by_the_vendor_in_its_wire_form_reaches_no_store_log_or_published_file(
    tmp_path, monkeypatch, simulator, echo_vendor, capfd
):
    home = make_home(tmp_path / "home", ["serpapi"], rows_per_stratum=6)
    manifest_path = home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    monkeypatch.setenv("BENCH_SPLIT_KEY", "split-key-for-the-echo-test")
    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    with dg.instance_for_test(temp_dir=str(dagster_home)) as instance:
        register_partitions(instance, [SNAPSHOT])
        resources = {
            **bench_resources(home, simulator.base_url),
            "vendor_keys": vendor_keys_from_env(home / "data" / "snapshots"),
        }
        assert dg.materialize(
            assets(*GOLDEN_STAGES), instance=instance, partition_key=SNAPSHOT, resources=resources
        ).success
        data = yaml.safe_load(manifest_path.read_text())
        data["mode"] = "live"
        data["vendors"]["serpapi"]["endpoints"] = {"search": echo_vendor.url}
        manifest_path.write_text(yaml.safe_dump(data, sort_keys=False))
        assert dg.materialize(
            assets(*VENDOR_STAGES), instance=instance, partition_key=vendor_key("serpapi"), resources=resources
        ).success
        send_packets_dated_back(instance, resources, home, data)
        assert dg.materialize(
            assets("published_snapshot"), instance=instance, partition_key=SNAPSHOT, resources=resources
        ).success
    monkeypatch.setenv("BENCH_HOME", str(home))
    capfd.readouterr()
    assert main(["preflight", SNAPSHOT, "--json"]) == 1  # the echo refuses the preflight's query
    preflight = capfd.readouterr()
    report = json.loads(preflight.out)
    assert report["vendors"][0]["response_class"] == "auth" and "<redacted>" in report["vendors"][0]["problem"]

    # What left the process: the key in a form of the transport's own, not one the old list knew.
    on_the_wire = wire_forms(echo_vendor.received)
    assert len(on_the_wire) == 1 and unquote(next(iter(on_the_wire))) == KEY
    assert on_the_wire.isdisjoint({KEY, quote(KEY, safe=""), quote_plus(KEY)})
    forms = on_the_wire | {KEY, quote(KEY, safe=""), quote_plus(KEY), quote(KEY), KEY.replace("/", "\\/")}
    echoes = [r for r in echo_vendor.received if b"q=" in r]
    assert len(echoes) > 10

    haystacks: dict[str, str] = {"bench preflight --json": preflight.out + preflight.err}
    for path in list(dagster_home.rglob("*")) + list((home / "data").rglob("*")):
        if not path.is_file() or path.suffix in (".lock", ".lease"):
            continue
        if path.suffix == ".duckdb":
            haystacks[str(path)] = all_text_in_duckdb(path)
        elif path.suffix == ".parquet":
            haystacks[str(path)] = "\n".join(parquet_readings(path.read_bytes()))
        elif path.suffix == ".zip":  # the custody journal's entries: Parquet files in a zip
            with zipfile.ZipFile(path) as bundle:
                haystacks[str(path)] = "\n".join(
                    "\n".join(parquet_readings(bundle.read(n))) for n in bundle.namelist() if n.endswith(".parquet")
                )
        else:
            haystacks[str(path)] = path.read_bytes().decode("utf-8", "replace")
    where = {
        "warehouse": "warehouse/bench.duckdb",
        "partition archive": "partitions/web_search-2026-q3/serpapi.duckdb",
        "preflight archive": "preflight.duckdb",
        "custody journal": "/journal/entries/",
        "review packets": "/private/review/",
        "published site": "/publish/",
        "Dagster logs": str(dagster_home),
    }
    for name, part in where.items():
        assert any(part in h for h in haystacks), f"nothing scanned for the {name}"
    # the echoes were kept as evidence (scrubbed), so there was something to leak
    assert ECHO_MARK in haystacks[str(home / "data" / "warehouse" / "partitions" / SNAPSHOT / "serpapi.duckdb")]
    leaks = sorted({(h, f) for h, text in haystacks.items() for f in forms if f.lower() in text.lower()})
    assert leaks == []
    # SerpApi's terms allow digests only: its error bodies are not on the published pages either
    published = {h: t for h, t in haystacks.items() if "/publish/" in h}
    assert len(published) > 20
    assert [h for h, text in published.items() if ECHO_MARK in text] == []
    assert any(
        "the vendor&#39;s error body is not published" in t or "the vendor's error body is not published" in t
        for t in published.values()
    )
