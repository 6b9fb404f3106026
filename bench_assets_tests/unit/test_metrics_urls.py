"""normalize_url: the matching contract of hit@k (DESIGN.md, "Metric definitions")."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.metrics import normalize_url, urls

UNRESERVED = string.ascii_letters + string.digits + "-._~"

label = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=8).filter(
    lambda text: text != "www"
)
hosts = st.lists(label, min_size=2, max_size=4).map(".".join)
# Unreserved characters, characters allowed raw in a path, and characters that must be
# percent-encoded (space, non-ASCII); never "%", "/", "?" or "#", so a generated path is
# exactly one path.
segments = st.text(alphabet=UNRESERVED + "!$'()*,;=:@ é", min_size=1, max_size=8).filter(
    lambda text: text not in {".", ".."}
)
# A space that ends the whole URL is not part of it (URL parsers, urllib's and WHATWG's, strip it),
# so no generated path ends with one: "/a " and "/a /" are different URLs.
paths = (
    st.lists(segments, max_size=4)
    .map(lambda parts: "".join("/" + part for part in parts))
    .filter(lambda path: not path.endswith(" "))
)
param_keys = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=5)
param_values = st.text(alphabet=string.ascii_letters + string.digits, max_size=5)
params = st.lists(st.tuples(param_keys, param_values), max_size=4)
utm_params = st.lists(
    st.tuples(st.sampled_from(["utm_source", "utm_medium", "UTM_Campaign", "utm_x"]), param_values),
    max_size=3,
)

FAST = settings(deadline=None, max_examples=50)


def build(scheme: str, host: str, port: str, path: str, query: list[tuple[str, str]], fragment: str) -> str:
    url = f"{scheme}://{host}{port}{path}"
    if query:
        url += "?" + "&".join(f"{key}={value}" for key, value in query)
    if fragment:
        url += "#" + fragment
    return url


def percent_encode_some(path: str, choices: list[int]) -> str:
    """Percent-encode unreserved characters of ``path`` where ``choices`` says so
    (0: leave, 1: upper-case hex, 2: lower-case hex)."""
    out = []
    for char, choice in zip(path, choices):
        if char in UNRESERVED and choice == 1:
            out.append(f"%{ord(char):02X}")
        elif char in UNRESERVED and choice == 2:
            out.append(f"%{ord(char):02x}")
        else:
            out.append(char)
    return "".join(out)


# --- properties ----------------------------------------------------------------------------


@FAST
@given(st.text())
def test_idempotent_on_arbitrary_text(text: str) -> None:
    once = normalize_url(text)
    assert normalize_url(once) == once


@FAST
@given(hosts, paths, params, utm_params, st.text(max_size=5))
def test_idempotent_on_urls(host: str, path: str, query: list, utm: list, fragment: str) -> None:
    url = build("HTTPS", "WWW." + host.upper(), ":443", path + "/", query + utm, fragment)
    once = normalize_url(url)
    assert normalize_url(once) == once


@FAST
@given(hosts, paths, params, st.data())
def test_equivalent_spellings_normalize_alike(host: str, path: str, query: list, data) -> None:
    """Host case, www., default ports, http/https, utm_*, parameter order, fragment,
    trailing slash and percent-encoding of unreserved characters never change the form."""
    canonical = normalize_url(build("https", host, "", path, query, ""))

    scheme = data.draw(st.sampled_from(["http", "https", "HTTP", "Https"]))
    port = data.draw(st.sampled_from(["", ":80" if scheme.lower() == "http" else ":443"]))
    flips = data.draw(st.lists(st.booleans(), min_size=len(host), max_size=len(host)))
    cased_host = "".join(c.upper() if flip else c for c, flip in zip(host, flips))
    if data.draw(st.booleans()):
        cased_host = data.draw(st.sampled_from(["www.", "WWW.", "Www."])) + cased_host
    encoded_path = percent_encode_some(
        path, data.draw(st.lists(st.integers(0, 2), min_size=len(path), max_size=len(path)))
    )
    if data.draw(st.booleans()):
        encoded_path += "/"
    shuffled = data.draw(st.permutations(query))
    with_utm = list(shuffled)
    for key, value in data.draw(utm_params):
        with_utm.insert(data.draw(st.integers(0, len(with_utm))), (key, value))
    fragment = data.draw(st.text(max_size=6))

    variant = build(scheme, cased_host, port, encoded_path, with_utm, fragment)
    assert normalize_url(variant) == canonical, variant


@FAST
@given(hosts, paths, st.data())
def test_path_case_matters(host: str, path: str, data) -> None:
    letters = [i for i, char in enumerate(path) if char.isascii() and char.isalpha()]
    if not letters:
        path += "/a"
        letters = [len(path) - 1]
    i = data.draw(st.sampled_from(letters))
    swapped = path[:i] + path[i].swapcase() + path[i + 1 :]
    assert normalize_url(f"https://{host}{path}") != normalize_url(f"https://{host}{swapped}")


@FAST
@given(hosts, paths, hosts, paths)
def test_different_hosts_or_paths_never_collide(host1: str, path1: str, host2: str, path2: str) -> None:
    if (host1, path1) == (host2, path2):
        assert normalize_url(f"http://{host1}{path1}") == normalize_url(f"https://{host2}{path2}")
    else:
        assert normalize_url(f"http://{host1}{path1}") != normalize_url(f"https://{host2}{path2}")


@FAST
@given(hosts, paths, params, params)
def test_different_queries_do_not_collide(host: str, path: str, query1: list, query2: list) -> None:
    url1 = build("https", host, "", path, query1, "")
    url2 = build("https", host, "", path, query2, "")
    same_multiset = sorted(f"{k}={v}" for k, v in query1) == sorted(f"{k}={v}" for k, v in query2)
    assert (normalize_url(url1) == normalize_url(url2)) == same_multiset


# --- examples ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://WWW.Example.COM:80/a/b/?utm_source=x&b=2&a=1#frag", "example.com/a/b?a=1&b=2"),
        ("https://example.com:443/a/b?a=1&b=2", "example.com/a/b?a=1&b=2"),
        ("https://example.com:8443/a", "example.com:8443/a"),
        ("https://example.com:0080/a", "example.com/a"),
        ("example.com/x", "example.com/x"),
        ("//example.com/x", "example.com/x"),
        ("https://example.com/%7Euser/%41%62", "example.com/~user/Ab"),
        ("https://example.com/a%2fb", "example.com/a%2Fb"),
        ("https://example.com/a%2Fb", "example.com/a%2Fb"),
        ("https://example.com/caf%c3%a9", "example.com/caf%C3%A9"),
        ("https://example.com/café menu", "example.com/caf%C3%A9%20menu"),
        ("https://example.com/100%", "example.com/100%25"),
        ("https://example.com/a/./b/../c/", "example.com/a/c"),
        ("https://example.com/", "example.com"),
        ("https://example.com///", "example.com"),
        ("https://example.com./x", "example.com/x"),
        ("https://example.com?", "example.com"),
        ("https://example.com/?utm_source=a&UTM_medium=b", "example.com"),
        ("https://example.com/?q=a+b&q=c", "example.com?q=a+b&q=c"),
        ("https://user:secret@example.com/private", "example.com/private"),
        ("https://Bücher.example/Straße", "xn--bcher-kva.example/Stra%C3%9Fe"),
        ("https://xn--bcher-kva.example/Stra%C3%9Fe", "xn--bcher-kva.example/Stra%C3%9Fe"),
        ("http://[2001:DB8::1]:80/x", "[2001:db8::1]/x"),
        ("ftp://Files.example.com/a/", "ftp://files.example.com/a"),
        ("mailto:Someone@Example.com", "mailto:Someone@Example.com"),
        ("www.com", "www.com"),
        ("https://www.www.example.com/", "example.com"),
        ("", ""),
        ("   ", ""),
        ("https://", ""),
        ("#only-a-fragment", ""),
    ],
)
def test_examples(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://example.com/A", "https://example.com/a"),
        ("https://example.com/a", "https://example.org/a"),
        ("https://example.com/a/b", "https://example.com/a%2Fb"),
        ("https://example.com:8080/a", "https://example.com/a"),
        ("https://example.com/a?x=1", "https://example.com/a?x=2"),
        ("https://example.com/a?x=1", "https://example.com/a"),
        ("https://www.com/", "https://com/"),
        ("mailto:a@example.com", "https://example.com"),
        ("ftp://example.com/a", "https://example.com/a"),
    ],
)
def test_distinct_pages_stay_distinct(a: str, b: str) -> None:
    assert normalize_url(a) != normalize_url(b)


@pytest.mark.parametrize(
    "garbage",
    [
        "::",
        "::80",
        ":00:80",
        "http://a.com:abc/x",
        "http:///x",
        "%",
        "%%41",
        "\ud800",
        "http://\ud800.com/",
        "http://[::1",
        "a" * 5000,
        "http://ex ample.com/ x",
        "javascript:alert(1)",
        "\x00\x01",
    ],
)
def test_garbage_never_raises_and_is_stable(garbage: str) -> None:
    once = normalize_url(garbage)
    assert isinstance(once, str)
    assert normalize_url(once) == once


def test_non_string_input_gives_empty_form() -> None:
    assert normalize_url(None) == ""  # type: ignore[arg-type]


@FAST
@given(st.text(alphabet=st.sampled_from("aZ09-._~!$&'()*+,;=:@/?%#[] \né%2F%7e%zz"), max_size=30))
def test_a_component_already_normal_is_returned_as_it_is(text: str) -> None:
    """The shortcut for a component with nothing to encode or decode gives what the full pass gives."""
    shortcut = urls._UNCHANGED
    for safe in (urls._PATH_SAFE, urls._QUERY_SAFE):
        try:
            urls._UNCHANGED = {s: re.compile(r"(?!)") for s in shortcut}  # matches nothing: the full pass
            expected = urls._normalize_percent_encoding(text, safe)
        finally:
            urls._UNCHANGED = shortcut
        assert urls._normalize_percent_encoding(text, safe) == expected
