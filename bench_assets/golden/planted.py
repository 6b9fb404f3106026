"""The planted corpus: pages we control, served by the simulator, and the golden rows built on them.

Everything here is deterministic from a seed, so the demo golden set, the pages the simulator
serves and the facts the golden rows assert can never drift apart. Each stratum has its own
page template; every page carries a title, anchor phrases, a table, numeric facts and
boilerplate noise (navigation, cookie banner, footer) that a faithful extractor leaves out.
Distractor pages share each page's topic words so that search is not trivial.

Most answer rows are precise (a number or a name on the page). Some pages instead lead with a
range stated with its method, or with an explicit statement that a quantity is not disclosed
(`ANSWER_KINDS`); their answer rows are `range` and `not_available` rows scored with the
per-cell rubric. Each not-disclosed quantity also has a non-authoritative page (a forum, a
blog) that states a fabricated precise figure for it: a vendor that ranks that page first
returns hallucinated precision and scores 0. These variants draw their numbers from a random
stream of their own, keyed by the page URL, so the seeded streams of every page stay the same.
"""

from __future__ import annotations

import html
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal

from bench_assets.golden.rows import AnswerTask, ExtractTask, GoldenRow, SearchTask, Verification

DEMO_SEED = 20260611
PLANTED_VERIFIER = "bench planted-corpus generator"
NOISE_STRINGS = (
    "Accept all cookies to continue browsing",
    "Subscribe to our weekly newsletter",
    "Sponsored: upgrade your plan today",
)

_SYLLABLES = [
    "ka",
    "lo",
    "mir",
    "ven",
    "dra",
    "tos",
    "quel",
    "bar",
    "nix",
    "pel",
    "sor",
    "tam",
    "vik",
    "zun",
    "har",
    "bel",
    "cor",
    "dim",
    "fal",
    "gor",
    "jun",
    "lis",
    "mon",
    "ost",
    "rav",
    "sil",
    "tur",
    "wen",
]


def _name(rng: random.Random, parts: int = 3) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()


class EntityNames:
    """The entity names (company, product, town, compound, brand) a stratum's pages are about, kept
    unique: two pages about one entity would ask the same question of different pages. A name
    already taken is drawn again; after `REDRAWS` misses in a row the name grows by a syllable, so a
    stratum larger than its name space still gets fresh names. Nothing is redrawn until a name
    repeats, so a corpus without repeats is the same as before names were kept unique."""

    REDRAWS = 32

    def __init__(self, taken: set[str] | None = None):
        self.taken: set[str] = set() if taken is None else taken

    def draw(self, rng: random.Random, parts: int = 3) -> str:
        misses = 0
        while True:
            name = _name(rng, parts + misses // self.REDRAWS)
            if name.lower() not in self.taken:
                self.taken.add(name.lower())
                return name
            misses += 1


AnswerKind = Literal["precise", "range", "not_available"]  # an answer row's `answer_type`


@dataclass(frozen=True)
class Page:
    """One planted page: its canonical URL, its parts, and the facts golden rows assert on it."""

    url: str
    stratum: str
    title: str
    paragraphs: tuple[str, ...]
    table_header: tuple[str, ...]
    table_rows: tuple[tuple[str, ...], ...]
    anchor_phrases: tuple[str, ...] = ()
    numeric_facts: tuple[float, ...] = ()
    query: str = ""
    question: str = ""
    exact_answer: str | None = None
    number_answer: float | None = None
    published: str = "2026-05-01"
    golden: bool = True
    # The answer row's type and, for range / not_available rows, what the rubric needs.
    answer_type: AnswerKind = "precise"
    cue: str | None = None
    range_low: float | None = None
    range_high: float | None = None
    plausible_low: float | None = None
    plausible_high: float | None = None
    percentage: bool = False
    # Non-authoritative pages that state a fabricated figure for this page's undisclosed quantity.
    fabrications: tuple[Page, ...] = ()
    # The name the page's questions are about (unique within its stratum; empty for non-golden pages).
    entity: str = ""

    @property
    def host(self) -> str:
        return self.url.split("/")[2]

    @property
    def table_cells(self) -> tuple[str, ...]:
        return tuple(c for row in self.table_rows for c in row)

    def text(self) -> str:
        """The main text (what a perfect extractor returns), used by the search index."""
        table = "\n".join(" | ".join(r) for r in (self.table_header, *self.table_rows))
        return "\n\n".join([self.title, *self.paragraphs, table])

    def render_html(self) -> str:
        e = html.escape
        rows = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in self.table_rows)
        head = "".join(f"<th>{e(c)}</th>" for c in self.table_header)
        paras = "".join(f"<p>{e(p)}</p>" for p in self.paragraphs)
        return (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{e(self.title)}</title>"
            f'<meta name="article:published_time" content="{self.published}T09:00:00Z"></head><body>'
            f'<nav class="site-nav"><a href="/">Home</a> {e(NOISE_STRINGS[1])}</nav>'
            f'<div class="cookie-banner">{e(NOISE_STRINGS[0])}</div>'
            f"<main><article><h1>{e(self.title)}</h1>{paras}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></article></main>"
            f'<aside class="ad">{e(NOISE_STRINGS[2])}</aside>'
            f"<footer>Copyright 2026 {e(self.host)}. All rights reserved.</footer></body></html>"
        )


# ----------------------------------------------------------------------------- range and not-available rows

# Which pages carry a range or a not-available answer row instead of a precise one, by their
# 1-based position n in their stratum's stream: n % 7 == 2 (range) and n % 7 == 4 (not available),
# so two pages per stratum already include a range row and four include both.
ANSWER_KINDS: dict[int, AnswerKind] = {2: "range", 4: "not_available"}


def answer_kind(position: int) -> AnswerKind:
    """The answer type of the page at 1-based `position` of its stratum's stream."""
    return ANSWER_KINDS.get(position % 7, "precise")


@dataclass(frozen=True)
class AnswerVariant:
    """What a range or not-available page states, and the row asked about it.

    `statement` is the sentence the page leads with: the range with its method, or the explicit
    not-disclosed statement. `low`/`high` are the reference range (range rows) or the plausible
    interval (not-available rows, optional). `fabricated` is the (title, sentence) of the
    non-authoritative page that states a made-up precise figure for an undisclosed quantity.
    """

    statement: str
    question: str
    cue: str
    low: float | None = None
    high: float | None = None
    percentage: bool = False
    fabricated: tuple[str, str] | None = None


VariantMaker = Callable[[random.Random], AnswerVariant]


def _fabrication(page: Page, variant: AnswerVariant, rng: random.Random) -> Page:
    """A forum page that states a made-up precise figure for the page's undisclosed quantity."""
    assert variant.fabricated is not None
    title, sentence = variant.fabricated
    site = _name(rng, 2)
    slug = "-".join(re.findall(r"[a-z0-9]+", variant.cue.lower()))
    return Page(
        url=f"https://www.{site.lower()}-forum.test/{page.stratum}/{slug}-{rng.randint(1000, 9999)}",
        stratum=page.stratum,
        title=title,
        paragraphs=(
            sentence,
            f"Posted by a reader of the {site} forum; nobody has checked it.",
            *(_chatter(rng) for _ in range(3)),
        ),
        table_header=("Thread", "Replies"),
        table_rows=((f"{site} forum", str(rng.randint(2, 80))),),
        golden=False,
        published="2026-06-20",
    )


def _chatter(rng: random.Random) -> str:
    """A line of forum chatter in invented words: the page is as long as a real thread, and says nothing."""
    return " ".join(_name(rng, 2).lower() for _ in range(12)).capitalize() + "."


def _vary(page: Page, index: int, make_range: VariantMaker, make_not_available: VariantMaker) -> Page:
    """The page as built, or, at a range / not-available position, the page leading with its
    statement and asking about it. Numbers come from a stream keyed by the page URL, never
    from the stratum's stream, so no other page changes."""
    kind = answer_kind(index + 1)
    if kind == "precise":
        return page
    rng = random.Random(f"answer-variant:{page.url}")
    variant = (make_range if kind == "range" else make_not_available)(rng)
    bounds: dict[str, Any] = (
        {"range_low": variant.low, "range_high": variant.high}
        if kind == "range"
        else {"plausible_low": variant.low, "plausible_high": variant.high}
    )
    return replace(
        page,
        paragraphs=(variant.statement, *page.paragraphs),
        question=variant.question,
        exact_answer=None,
        number_answer=None,
        answer_type=kind,
        cue=variant.cue,
        percentage=variant.percentage,
        **bounds,
        fabrications=(_fabrication(page, variant, rng),) if variant.fabricated else (),
    )


# ----------------------------------------------------------------------------- stratum templates


def _finance(rng: random.Random, i: int, names: EntityNames) -> Page:
    company = names.draw(rng)
    quarters = ["Q1 2026", "Q2 2026", "Q3 2025", "Q4 2025"]
    revenue = [round(rng.uniform(120, 9800), 1) for _ in quarters]
    margin = [round(rng.uniform(4, 41), 1) for _ in quarters]
    ticker = company[:4].upper()
    page = Page(
        url=f"https://investors.{company.lower()}.test/reports/q2-2026-results",
        stratum="finance",
        title=f"{company} Holdings reports Q2 2026 results",
        paragraphs=(
            f"{company} Holdings (ticker {ticker}) reported second quarter 2026 revenue of "
            f"{revenue[1]:,.1f} million dollars, with an operating margin of {margin[1]} percent.",
            f"The {company} board approved a quarterly dividend and reaffirmed full-year guidance for 2026.",
            f"Chief financial officer {_name(rng, 2)} {_name(rng, 3)} said demand in the {rng.choice(['logistics', 'retail', 'energy', 'media'])} segment stayed strong.",
        ),
        table_header=("Quarter", "Revenue (USD m)", "Operating margin (%)"),
        table_rows=tuple((q, f"{r:,.1f}", f"{m}") for q, r, m in zip(quarters, revenue, margin)),
        anchor_phrases=(f"{company} Holdings (ticker {ticker})", "reaffirmed full-year guidance for 2026"),
        numeric_facts=(revenue[1], margin[1]),
        query=f"{company} Holdings Q2 2026 results revenue",
        question=f"What revenue in million dollars did {company} Holdings report for the second quarter 2026?",
        number_answer=revenue[1],
        published="2026-07-28",
        entity=company,
    )

    def guidance(r: random.Random) -> AnswerVariant:
        low = round(revenue[1] * 4 * r.uniform(0.9, 0.98))
        high = round(low * r.uniform(1.06, 1.15))
        return AnswerVariant(
            f"The full-year 2026 revenue of {company} Holdings is guided at {low:,} to {high:,} million dollars, "
            f"estimated from its order backlog and current exchange rates.",
            f"What full-year 2026 revenue does {company} Holdings guide to, in million dollars?",
            f"full-year 2026 revenue of {company} Holdings",
            low,
            high,
        )

    def churn(r: random.Random) -> AnswerVariant:
        return AnswerVariant(
            f"The customer churn rate of {company} Holdings is not disclosed in its Q2 2026 report.",
            f"What customer churn rate did {company} Holdings report for Q2 2026?",
            f"customer churn rate of {company} Holdings",
            0.5,
            30.0,
            percentage=True,
            fabricated=(
                "Stock chat",
                f"A member says the customer churn rate of {company} Holdings was {r.uniform(2, 14):.1f} percent.",
            ),
        )

    return _vary(page, i, guidance, churn)


def _docs(rng: random.Random, i: int, names: EntityNames) -> Page:
    product = names.draw(rng, 2)
    feature = rng.choice(["rate limiting", "webhooks", "single sign-on", "audit logs", "retries", "caching"])
    slug = feature.replace(" ", "-")
    limit = rng.choice([50, 100, 250, 500, 1000, 2000])
    timeout = rng.choice([5, 10, 15, 30, 60, 90])
    version = f"{rng.randint(2, 9)}.{rng.randint(0, 20)}"
    page = Page(
        url=f"https://docs.{product.lower()}.test/guides/{slug}",
        stratum="docs",
        title=f"Configuring {feature} in {product} {version}",
        paragraphs=(
            f"This guide explains how to configure {feature} in {product} version {version}.",
            f"By default {product} allows {limit} requests per minute per key and closes idle connections after {timeout} seconds.",
            f"Set the {product.lower()}_{slug.replace('-', '_')} option in the project file to change the behaviour.",
        ),
        table_header=("Setting", "Default", "Maximum"),
        table_rows=(
            ("requests_per_minute", str(limit), str(limit * 10)),
            ("idle_timeout_seconds", str(timeout), "600"),
        ),
        anchor_phrases=(
            f"configure {feature} in {product} version {version}",
            f"{product.lower()}_{slug.replace('-', '_')} option",
        ),
        numeric_facts=(float(limit), float(timeout)),
        query=f"{product} {feature} configuration guide",
        question=f"How many seconds does {product} wait before closing idle connections by default?",
        number_answer=float(timeout),
        published="2026-03-14",
        entity=product,
    )

    def latency(r: random.Random) -> AnswerVariant:
        low = r.choice([40, 60, 80, 120, 150])
        high = low + r.choice([30, 50, 80, 120])
        return AnswerVariant(
            f"The p95 response time of {product} for {feature} is {low} to {high} milliseconds, "
            f"measured in load tests of a reference deployment.",
            f"What p95 response time does {product} report for {feature}?",
            f"p95 response time of {product}",
            float(low),
            float(high),
        )

    def payload(r: random.Random) -> AnswerVariant:
        return AnswerVariant(
            f"The maximum payload size of {product} for {feature} is not documented.",
            f"What is the maximum payload size {product} accepts for {feature}?",
            f"maximum payload size of {product}",
            fabricated=(
                "Forum thread",
                f"A poster says the maximum payload size of {product} for {feature} is "
                f"{r.choice([5, 8, 10, 25, 50])} megabytes.",
            ),
        )

    return _vary(page, i, latency, payload)


def _news(rng: random.Random, i: int, names: EntityNames) -> Page:
    town = names.draw(rng)
    paper = _name(rng, 2)
    event = rng.choice(
        ["bridge reopening", "flood defences", "tram extension", "library renovation", "harbour dredging"]
    )
    cost = round(rng.uniform(2, 480), 1)
    mayor = f"{_name(rng, 2)} {_name(rng, 3)}"
    day = rng.randint(1, 28)
    page = Page(
        url=f"https://www.{paper.lower()}-tribune.test/2026/06/{town.lower()}-{event.replace(' ', '-')}",
        stratum="news",
        title=f"{town} approves {event} after long debate",
        paragraphs=(
            f"The {town} council voted on June {day} to approve the {event}, a project budgeted at {cost} million euros.",
            f"Mayor {mayor} said the {event} would begin before the end of the year.",
            f"Residents of {town} had petitioned for the {event} since 2019.",
        ),
        table_header=("Item", "Value"),
        table_rows=(("Budget (EUR m)", f"{cost}"), ("Council vote", f"June {day}"), ("Mayor", mayor)),
        anchor_phrases=(f"The {town} council voted on June {day}", f"petitioned for the {event} since 2019"),
        numeric_facts=(cost,),
        query=f"{town} council {event} vote",
        question=f"Who is the mayor of {town} who commented on the {event}?",
        exact_answer=mayor,
        published=f"2026-06-{day:02d}",
        entity=town,
    )

    def duration(r: random.Random) -> AnswerVariant:
        low = r.randint(8, 24)
        high = low + r.randint(4, 12)
        return AnswerVariant(
            f"City engineers put the construction time of the {town} {event} at {low} to {high} months, "
            f"estimated from comparable projects in the region.",
            f"What construction time do {town} city engineers expect for the {event}?",
            f"construction time of the {town} {event}",
            float(low),
            float(high),
        )

    def contractor(r: random.Random) -> AnswerVariant:
        return AnswerVariant(
            f"The council has not disclosed the contractor fee for the {town} {event}.",
            f"What contractor fee will {town} pay for the {event}?",
            f"contractor fee for the {town} {event}",
            fabricated=(
                "Neighbourhood blog",
                f"We hear the contractor fee for the {town} {event} is {r.uniform(0.4, 9.0):.1f} million euros.",
            ),
        )

    return _vary(page, i, duration, contractor)


def _science(rng: random.Random, i: int, names: EntityNames) -> Page:
    stem = names.draw(rng)
    compound = stem + "ine"
    journal = _name(rng, 2)
    n = rng.randint(40, 2400)
    effect = round(rng.uniform(0.05, 0.92), 2)
    year = rng.choice([2024, 2025, 2026])
    page = Page(
        url=f"https://journals.{journal.lower()}.test/article/{year}/{compound.lower()}-trial",
        stratum="science",
        title=f"A randomized trial of {compound} in adults",
        paragraphs=(
            f"We enrolled {n} participants in a randomized controlled trial of {compound} published in {year}.",
            f"The primary outcome improved with a standardized effect size of {effect}.",
            f"Adverse events with {compound} were mild and comparable to placebo.",
        ),
        table_header=("Measure", "Value"),
        table_rows=(("Participants", str(n)), ("Effect size", f"{effect}"), ("Year", str(year))),
        anchor_phrases=(f"randomized controlled trial of {compound}", "comparable to placebo"),
        numeric_facts=(float(n), effect),
        query=f"{compound} randomized trial adults",
        question=f"How many participants were enrolled in the randomized trial of {compound}?",
        number_answer=float(n),
        published=f"{year}-02-10",
        entity=stem,
    )

    def cost(r: random.Random) -> AnswerVariant:
        low = r.randrange(600, 3000, 50)
        high = low + r.randrange(300, 1500, 50)
        return AnswerVariant(
            f"The cost per participant of the {compound} trial was {low:,} to {high:,} dollars, "
            f"estimated from the budgets of the trial sites.",
            f"What was the cost per participant of the {compound} trial, in dollars?",
            f"cost per participant of the {compound} trial",
            float(low),
            float(high),
        )

    def dropout(r: random.Random) -> AnswerVariant:
        return AnswerVariant(
            f"The authors did not report the dropout rate of the {compound} trial.",
            f"What dropout rate did the randomized trial of {compound} report?",
            f"dropout rate of the {compound} trial",
            2.0,
            40.0,
            percentage=True,
            fabricated=(
                f"Health newsletter: {compound}",
                f"Word is the dropout rate of the {compound} trial was {r.uniform(3, 25):.1f} percent.",
            ),
        )

    return _vary(page, i, cost, dropout)


def _gov(rng: random.Random, i: int, names: EntityNames) -> Page:
    town = names.draw(rng)
    fee = round(rng.uniform(12, 340), 2)
    deadline = rng.choice(["March 31", "April 30", "May 15", "September 30", "October 15"])
    office = rng.choice(["permits office", "water authority", "tax office", "parking bureau"])
    page = Page(
        url=f"https://www.{town.lower()}.gov.test/services/{office.replace(' ', '-')}/fees",
        stratum="gov",
        title=f"{town} {office} fees and deadlines 2026",
        paragraphs=(
            f"The {town} {office} charges a standard fee of {fee:,.2f} dollars for 2026 applications.",
            f"Applications must reach the {office} by {deadline} to be processed this year.",
            f"Fee waivers are available to {town} residents over 65.",
        ),
        table_header=("Service", "Fee (USD)", "Deadline"),
        table_rows=(("Standard application", f"{fee:,.2f}", deadline), ("Renewal", f"{fee / 2:,.2f}", deadline)),
        anchor_phrases=(f"must reach the {office} by {deadline}", f"waivers are available to {town} residents"),
        numeric_facts=(fee,),
        query=f"{town} {office} fees 2026",
        question=f"By which date must applications reach the {town} {office}?",
        exact_answer=deadline,
        published="2026-01-05",
        entity=town,
    )

    def processing(r: random.Random) -> AnswerVariant:
        low = r.randint(5, 20)
        high = low + r.randint(5, 15)
        return AnswerVariant(
            f"The processing time of the {town} {office} is {low} to {high} business days, "
            f"based on last year's caseload.",
            f"What processing time does the {town} {office} quote for applications?",
            f"processing time of the {town} {office}",
            float(low),
            float(high),
        )

    def volume(r: random.Random) -> AnswerVariant:
        return AnswerVariant(
            f"The number of applications to the {town} {office} is not published.",
            f"How many applications does the {town} {office} receive each year?",
            f"number of applications to the {town} {office}",
            fabricated=(
                "Local forum",
                f"Someone claims the number of applications to the {town} {office} is about "
                f"{r.randrange(800, 40000, 100):,} each year.",
            ),
        )

    return _vary(page, i, processing, volume)


def _commerce(rng: random.Random, i: int, names: EntityNames) -> Page:
    brand = names.draw(rng, 2)
    item = rng.choice(["trail shoe", "espresso grinder", "standing desk", "e-bike battery", "rain jacket"])
    model = f"{brand[:2].upper()}-{rng.randint(100, 999)}"
    weight = rng.randint(180, 9400)
    price = round(rng.uniform(19, 1900), 2)
    page = Page(
        url=f"https://shop.{brand.lower()}.test/products/{model.lower()}",
        stratum="commerce",
        title=f"{brand} {model} {item}",
        paragraphs=(
            f"The {brand} {model} {item} weighs {weight:,} grams and ships within two days.",
            f"It retails for {price:,.2f} dollars and carries a three-year warranty.",
            f"Every {brand} {item} is tested in our own workshop.",
        ),
        table_header=("Specification", "Value"),
        table_rows=(("Model", model), ("Weight (g)", f"{weight:,}"), ("Price (USD)", f"{price:,.2f}")),
        anchor_phrases=(f"{brand} {model} {item} weighs", "carries a three-year warranty"),
        numeric_facts=(float(weight), price),
        query=f"{brand} {model} {item} specifications",
        question=f"How much does the {brand} {model} {item} weigh in grams?",
        number_answer=float(weight),
        published="2026-04-22",
        entity=brand,
    )

    def lifespan(r: random.Random) -> AnswerVariant:
        low = r.randint(3, 8)
        high = low + r.randint(2, 6)
        return AnswerVariant(
            f"The expected lifespan of the {brand} {model} {item} is {low} to {high} years, "
            f"derived from accelerated wear tests.",
            f"What expected lifespan does {brand} give for the {model} {item}?",
            f"expected lifespan of the {brand} {model}",
            float(low),
            float(high),
        )

    def sales(r: random.Random) -> AnswerVariant:
        return AnswerVariant(
            f"The number of {brand} {model} units sold is not disclosed.",
            f"How many units of the {brand} {model} {item} has {brand} sold?",
            f"number of {brand} {model} units sold",
            fabricated=(
                f"Gadget gossip: {brand}",
                f"Rumour has it the number of {brand} {model} units sold is {r.randrange(2000, 90000, 100):,}.",
            ),
        )

    return _vary(page, i, lifespan, sales)


STRATA = {
    "finance": _finance,
    "docs": _docs,
    "news": _news,
    "science": _science,
    "gov": _gov,
    "commerce": _commerce,
}


def _distractor(page: Page, rng: random.Random, n: int) -> Page:
    """A page on the same topic words but a different entity, so BM25 has to work for the hit."""
    other = _name(rng)
    words = page.query.split()
    return Page(
        url=f"https://www.{other.lower()}-digest.test/{page.stratum}/{n}-{other.lower()}",
        stratum=page.stratum,
        title=f"{other} digest: {' '.join(words[1:])}",
        paragraphs=(
            f"A roundup about {' '.join(words[1:])} from the {other} digest.",
            f"Readers asked about {words[-1]} and {words[-2] if len(words) > 1 else words[-1]} again this week.",
        ),
        table_header=("Topic", "Mentions"),
        table_rows=((words[-1], str(rng.randint(1, 90))),),
        golden=False,
        published="2026-05-01",
    )


@dataclass(frozen=True)
class Corpus:
    """The planted pages by canonical URL, and the golden pages in a stable order."""

    pages: dict[str, Page] = field(default_factory=dict)
    golden_pages: tuple[Page, ...] = ()

    def page(self, url: str) -> Page | None:
        return self.pages.get(url)


# Reserve pages: made from the same templates as the golden pages but from their own random
# streams, so the golden pages never change. "decoy" pages back the decoy queries sent with the
# holdout; "candidate" pages are the pool that dead rows and rotated rows are replaced from. They
# are served and searchable like any page, so nothing on the wire tells them from golden pages.
RESERVE_KINDS = ("decoy", "candidate")
RESERVE_HORIZON = 64  # reserve URLs avoid this many golden (and decoy) URLs per stratum, so pools are prefix-stable


def reserve_size(pages_per_stratum: int) -> int:
    """Reserve pages of each kind per stratum: half the golden pages (decoys up to 1.6 × a 30 % holdout)."""
    return max(1, (pages_per_stratum + 1) // 2)


def _stratum_stream(stratum: str, rng: random.Random, distractors_per_page: int, taken: set[str], names: EntityNames):
    """Pages of one stratum in their seeded order, each with its distractors; every page is about an
    entity no earlier page of the stratum is about (`names`), and URL collisions are redrawn."""
    template = STRATA[stratum]
    made = 0
    while True:
        page = template(rng, made, names)
        if page.url in taken:  # a name collision: draw again rather than overwrite a page
            continue
        taken.add(page.url)
        yield (
            page,
            [_distractor(page, rng, made * 10 + d) for d in range(distractors_per_page)] + list(page.fabrications),
        )
        made += 1


def _stream_rng(seed: int, stratum: str, kind: str) -> random.Random:
    return random.Random(f"{seed}:{stratum}" if kind == "golden" else f"{seed}:{stratum}:{kind}")


@lru_cache(maxsize=64)
def _stratum_pages(
    stratum: str, kind: str, count: int, seed: int = DEMO_SEED, distractors_per_page: int = 2, horizon: int = 0
) -> tuple[tuple[Page, tuple[Page, ...]], ...]:
    """The first `count` pages of one stratum's stream ("golden", "decoy" or "candidate"). A reserve
    stream avoids the first `horizon` pages of the streams before it (default: enough for a corpus
    with `count` reserve pages of a kind); the streams it avoids are drawn with the same horizon, so
    the pages it avoids are the ones a corpus of that size uses."""
    taken: set[str] = set()
    names = EntityNames()
    if kind != "golden":
        # each reserve stream avoids the URLs and entities of the streams before it, far beyond any
        # corpus size (a stratum has about twice as many golden pages as reserve pages of a kind)
        earlier = ("golden", *RESERVE_KINDS[: RESERVE_KINDS.index(kind)])
        horizon = horizon or max(RESERVE_HORIZON, 2 * count + 1)
        for other in earlier:
            for p, _ in _stratum_pages(
                stratum, other, horizon, seed, distractors_per_page, 0 if other == "golden" else horizon
            ):
                taken.add(p.url)
                names.taken.add(p.entity.lower())
    stream = _stratum_stream(stratum, _stream_rng(seed, stratum, kind), distractors_per_page, taken, names)
    out = []
    for _ in range(count):
        page, distractors = next(stream)
        out.append((page, tuple(distractors)))
    return tuple(out)


def forget_streams() -> None:
    """Let go of the page streams kept for the next call (`_stratum_pages`): drawing a corpus also
    draws, and keeps, the streams its reserves avoid, as many pages again. A process that keeps
    only the corpus it built (the simulator) then holds each page once."""
    _stratum_pages.cache_clear()


def reserve_horizon(base: int) -> int:
    """The pages of the streams before it a reserve stream avoids, for a corpus whose reserve is
    `base` pages per stratum (`reserve_size`): fixed by the golden set's size, so a candidate
    reserve grown beyond `base` (quarter after quarter) keeps its first pages."""
    return max(RESERVE_HORIZON, 2 * base + 1)


def reserve_pages(kind: str, stratum: str, count: int, seed: int = DEMO_SEED, base: int | None = None) -> list[Page]:
    """The first `count` reserve pages of a stratum (prefix-stable: more pages never change the
    first ones, given the same `base`, the corpus's default reserve size; default `count`)."""
    return [page for page, _ in _stratum_pages(stratum, kind, count, seed, 2, reserve_horizon(base or count))]


@lru_cache(maxsize=8)
def build_corpus(
    pages_per_stratum: int = 14,
    seed: int = DEMO_SEED,
    distractors_per_page: int = 2,
    reserve_per_stratum: int | None = None,
    candidates_per_stratum: int | None = None,
) -> Corpus:
    """Build the planted corpus deterministically from the seed: golden pages, their distractors,
    and `reserve_per_stratum` (default: `reserve_size`) decoy and candidate pages with theirs;
    `candidates_per_stratum` (default: as many) sizes the candidate reserve alone: a quarter drawn
    from the demo grows it (the first pages of a stream never change as it grows)."""
    reserve = reserve_size(pages_per_stratum) if reserve_per_stratum is None else reserve_per_stratum
    sizes = {"decoy": reserve, "candidate": reserve if candidates_per_stratum is None else candidates_per_stratum}
    pages: dict[str, Page] = {}
    golden: list[Page] = []
    for stratum in STRATA:
        for page, distractors in _stratum_pages(stratum, "golden", pages_per_stratum, seed, distractors_per_page):
            pages[page.url] = page
            golden.append(page)
            for other in distractors:
                pages.setdefault(other.url, other)
    for kind in RESERVE_KINDS:
        for stratum in STRATA:
            for page, distractors in _stratum_pages(
                stratum, kind, sizes[kind], seed, distractors_per_page, reserve_horizon(reserve)
            ):
                pages.setdefault(page.url, page)
                for other in distractors:
                    pages.setdefault(other.url, other)
    return Corpus(pages=pages, golden_pages=tuple(golden))


PLANTED_VERIFICATION = Verification(
    verified_by=PLANTED_VERIFIER,
    verified_at=datetime(2026, 6, 1, tzinfo=UTC),
    evidence="planted page generated from seed; facts asserted at generation",
)


def page_rows(page: Page, base: str, cohort: str) -> list[GoldenRow]:
    """The three golden rows (search, extract, answer) a planted page supports, ids `<base>-s|x|a`;
    the answer row is precise, range or not_available (see `ANSWER_KINDS`)."""
    common: dict[str, Any] = {
        "cohort": cohort,
        "stratum": page.stratum,
        "provenance": "planted",
        "verification": PLANTED_VERIFICATION,
        "published_on": page.published,  # the date the page states (article:published_time)
    }
    return [
        GoldenRow(id=f"{base}-s", task=SearchTask(type="search", query=page.query, golden_urls=[page.url]), **common),
        GoldenRow(
            id=f"{base}-x",
            task=ExtractTask(
                type="extract",
                url=page.url,
                title=page.title,
                anchor_phrases=list(page.anchor_phrases),
                table_cells=list(page.table_cells),
                numeric_facts=list(page.numeric_facts),
                numeric_tolerance=0.0,
                noise=list(NOISE_STRINGS),
            ),
            **common,
        ),
        GoldenRow(id=f"{base}-a", task=_answer_task(page), **common),
    ]


def _answer_task(page: Page) -> AnswerTask:
    """The answer row a page supports: precise (its number or name), or range / not_available
    (scored by the per-cell rubric on what the vendor's results say about the page's cue)."""
    if page.answer_type == "precise":
        return AnswerTask(
            type="answer",
            question=page.question,
            exact_answer=page.exact_answer,
            number=page.number_answer,
            tolerance=0.0 if page.number_answer is None else 0.001,
            source_urls=[page.url],
        )
    return AnswerTask(
        type="answer",
        question=page.question,
        answer_type=page.answer_type,
        cue=page.cue,
        range_low=page.range_low,
        range_high=page.range_high,
        plausible_low=page.plausible_low,
        plausible_high=page.plausible_high,
        percentage=page.percentage,
        source_urls=[page.url],
    )


def demo_golden_rows(rows_per_stratum: int = 42, cohort: str = "2026-q3", seed: int = DEMO_SEED) -> list[GoldenRow]:
    """Three golden rows (search, extract, answer) for each planted page: rows_per_stratum / 3 pages per stratum."""
    pages_per_stratum = max(1, rows_per_stratum // 3)
    corpus = build_corpus(pages_per_stratum=pages_per_stratum, seed=seed)
    rows: list[GoldenRow] = []
    counters: dict[str, int] = {}
    for page in corpus.golden_pages:
        n = counters[page.stratum] = counters.get(page.stratum, 0) + 1
        rows.extend(page_rows(page, f"{page.stratum}-{n:03d}", cohort))
    return rows


def reserve_rows(
    kind: str, pages_per_stratum: int, cohort: str = "2026-q3", seed: int = DEMO_SEED, base: int | None = None
) -> list[GoldenRow]:
    """Rows on the reserve pages of every stratum: decoys (`kind="decoy"`, ids `<stratum>-d001-s`)
    or the replacement candidates (`"candidate"`, ids `<stratum>-c001-s`), three per page (`base`:
    see `reserve_pages`)."""
    letter = {"decoy": "d", "candidate": "c"}[kind]
    rows: list[GoldenRow] = []
    for stratum in STRATA:
        for n, page in enumerate(reserve_pages(kind, stratum, pages_per_stratum, seed, base), start=1):
            rows.extend(page_rows(page, f"{stratum}-{letter}{n:03d}", cohort))
    return rows
