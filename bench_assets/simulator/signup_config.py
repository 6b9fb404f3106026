"""Which no-human sign-up flow each simulated vendor offers, and how it behaves.

This describes the stand-in world, not the real vendors. No real vendor documents API-key issuance
by OTP e-mail or by the OAuth 2.0 device authorization grant (vendors.md §13), so in the simulated
world a subset offers one of them, each with a behaviour chosen to mirror what the vendor really
asks of a new customer (a card at Brave and Perplexity, an account with a balance at Kagi, ...).
The trial harness is only told which flow to try (`plan`); the behaviour it has to discover.

Approval is automatic here: a device-code vendor whose flow succeeds approves the user code
after `approve_after_polls` polls, standing for a vendor that auto-approves agent sign-ups. A flow
configured to need a human (a CAPTCHA, a card) never gets there, and the trial ends as not
agent-ready with that reason.

Times are in the vendor's seconds (RFC 8628 defaults: interval 5 s, slow_down adds 5 s); the
simulator runs them at `BENCH_SIM_SIGNUP_TIME_SCALE` (default 0.02, so 5 s lasts 0.1 s) and
reports the scaled values, which the harness honours like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SignupMethod = Literal["otp_email", "device_code"]
Behaviour = Literal["success", "slow_down", "needs_captcha", "needs_card", "denies", "expires", "not_offered"]
BEHAVIOURS: tuple[str, ...] = ("success", "slow_down", "needs_captcha", "needs_card", "denies", "expires",
                               "not_offered")
DEFAULT_TIME_SCALE = 0.02


@dataclass(frozen=True)
class SignupOffer:
    """One vendor's sign-up flow in the simulated world.

    success        the key is issued (device code: approved after `approve_after_polls` polls)
    slow_down      device code: the first poll is answered slow_down, then as success
    needs_captcha  OTP: /signup answers captcha_required; device code: the verification page
                   shows a CAPTCHA and the code is never approved
    needs_card     the account is created, but creating an API key answers 402 (add a card)
    denies         OTP: /signup answers signup_rejected; device code: access_denied
    expires        device code: never approved, polling ends with expired_token
    not_offered    the flow's endpoints answer 404
    """

    method: SignupMethod
    behaviour: Behaviour
    client_id: str = ""  # the public client id of the vendor's CLI (device code only)
    key_prefix: str = ""  # issued keys look like the vendor's real ones
    approve_after_polls: int = 2
    interval_seconds: float = 5.0
    slow_down_increment_seconds: float = 5.0
    expires_in_seconds: float = 600.0
    otp_expires_in_seconds: float = 600.0


@dataclass(frozen=True)
class KeylessRoute:
    """A documented way to call the API with no key at all (vendors.md §13)."""

    header: str  # lower-case header name
    value: str
    paths: tuple[str, ...]
    evidence: str


# Where each vendor's (simulated) sign-up API lives; mounted under /h/<host> like every real host.
AUTH_HOSTS: dict[str, str] = {
    "brave": "auth.search.brave.com", "exa": "auth.exa.ai", "firecrawl": "auth.firecrawl.dev",
    "jina": "auth.jina.ai", "kagi": "auth.kagi.com", "linkup": "auth.linkup.so", "parallel": "auth.parallel.ai",
    "perplexity": "auth.perplexity.ai", "serpapi": "auth.serpapi.com", "serper": "auth.serper.dev",
    "tavily": "auth.tavily.com", "youcom": "auth.you.com",
}

DEMO_OFFERS: dict[str, SignupOffer] = {
    # Exa sells keys to agents already (Nevermined, x402): here it auto-approves a device-code sign-up.
    "exa": SignupOffer("device_code", "success", client_id="exa-cli"),
    # Firecrawl has a CLI login; here its device flow asks the agent to poll more slowly once.
    "firecrawl": SignupOffer("device_code", "slow_down", client_id="firecrawl-cli", key_prefix="fc-"),
    # Tavily's free tier needs no card: here an OTP e-mail is enough.
    "tavily": SignupOffer("otp_email", "success", key_prefix="tvly-"),
    "jina": SignupOffer("otp_email", "success", key_prefix="jina_"),
    # Brave needs a credit card even for its free credit (vendors.md §3).
    "brave": SignupOffer("otp_email", "needs_card"),
    # Perplexity needs prepaid credit before a key works (vendors.md §13).
    "perplexity": SignupOffer("device_code", "needs_card", client_id="pplx-cli", key_prefix="pplx-"),
    # Kagi needs an account with a balance: here it refuses automated sign-ups.
    "kagi": SignupOffer("device_code", "denies", client_id="kagi-cli"),
    # Dashboard sign-ups behind a CAPTCHA.
    "serper": SignupOffer("otp_email", "needs_captcha"),
    "serpapi": SignupOffer("device_code", "needs_captcha", client_id="serpapi-cli"),
    # A device flow nobody approves: the code expires (60 s of the vendor's time).
    "parallel": SignupOffer("device_code", "expires", client_id="parallel-cli", expires_in_seconds=60.0),
    # No sign-up API; their no-human routes are x402 (Linkup) and a free MCP profile (You.com).
    "linkup": SignupOffer("device_code", "not_offered", client_id="linkup-cli"),
    "youcom": SignupOffer("otp_email", "not_offered"),
}

# Keyless calls the simulator honours, as the vendor documents them.
KEYLESS_ROUTES: dict[str, KeylessRoute] = {
    "tavily": KeylessRoute("x-tavily-access-mode", "keyless", ("/search", "/extract"),
                           "tavily-python README: X-Tavily-Access-Mode: keyless (vendors.md §2, §13)"),
}
