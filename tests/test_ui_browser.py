"""The inspector in a real browser: Debian's Chromium driven by Selenium through Debian's
ChromeDriver, against `nous serve` on loopback. Sign in with a key, search, open a memory, edit
it (its history grows), and preview the context for a message. Screenshots of each step are
saved under the test's temporary folder.

Chromium is installed by scripts/install-chromium.sh (scripts/test.sh runs it). Where it is
missing this test fails and says so: it is never skipped."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from nous import Nous, Settings
from tests.test_server import LiveServer, live
from tests.test_ui import _keys, served  # noqa: F401  (the live server with keys)

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    assert CHROMIUM and CHROMEDRIVER, (
        "Chromium and ChromeDriver are needed for the inspector's browser test: "
        "run `bash scripts/install-chromium.sh` (scripts/test.sh does)"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(10)  # waits for an element to appear: a bound, not a timing assumption
    try:
        yield driver
    finally:
        driver.quit()


def _until(driver: WebDriver, done: Callable[[WebDriver], bool]) -> None:
    """Wait for a page the browser is still loading: a click returns before the navigation it
    starts has finished, so what follows waits for its result (bounded, not timed)."""
    # a look at a page being replaced can fail (a stale element): look again until it holds
    WebDriverWait(driver, 60, ignored_exceptions=(WebDriverException,)).until(done)


def _shot(driver: WebDriver, folder: Path, name: str) -> None:
    folder.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(folder / f"{name}.png"))


def test_sign_in_search_open_edit_and_preview_in_a_real_browser(
    served: tuple[LiveServer, dict[str, str]],  # noqa: F811
    browser: WebDriver,
    tmp_path: Path,
) -> None:
    server, keys = served
    shots = tmp_path / "screenshots"
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {keys['a']}"}) as api:
        created = api.post(
            "/v1/decisions",
            json={
                "content": "Move the payments ledger from MongoDB to PostgreSQL",
                "reasons": [{"type": "analysis", "text": "double-entry bookkeeping needs ACID"}],
                "confidence": 0.8,
            },
        )
        assert created.status_code == 201, created.text
        decision_id = created.json()["id"]

    browser.get(f"{server.url}/ui/")  # no cookie yet: the sign-in form
    assert browser.current_url.endswith("/ui/login")
    _shot(browser, shots, "1-login")
    browser.find_element(By.ID, "key").send_keys(keys["a"])
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _until(browser, lambda d: "/ui/login" not in d.current_url)  # the form posted, then redirected

    browser.get(f"{server.url}/ui/memories")
    search = browser.find_element(By.ID, "q")
    search.send_keys("why did we move the ledger?")
    search.submit()
    _shot(browser, shots, "2-search")
    first = browser.find_element(By.LINK_TEXT, "Move the payments ledger from MongoDB to PostgreSQL")
    first.click()
    _until(browser, lambda d: decision_id in d.current_url)
    _until(browser, lambda d: "double-entry bookkeeping needs ACID" in d.page_source)  # its reasons

    content = browser.find_element(By.ID, "content")
    content.clear()
    content.send_keys("Move the payments ledger from MongoDB to PostgreSQL 15")
    browser.find_element(By.XPATH, "//button[text()='Save']").click()
    _until(browser, lambda d: "PostgreSQL 15" in d.find_element(By.TAG_NAME, "blockquote").text)
    _shot(browser, shots, "3-edited")
    timeline = browser.find_elements(By.CSS_SELECTOR, "ol.timeline > li")
    assert len(timeline) >= 2  # created, then the edit

    browser.get(f"{server.url}/ui/context")
    message = browser.find_element(By.ID, "text")
    message.send_keys("Why did we move the ledger to Postgres?")
    message.submit()
    _until(browser, lambda d: bool(d.find_elements(By.ID, "section-decisions")))
    _shot(browser, shots, "4-context")
    assert browser.find_element(By.ID, "section-decisions")
    assert "PostgreSQL 15" in browser.find_element(By.ID, "section-decisions").text

    # link the decision to a fact from its page, then walk the link to the fact and back
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {keys['a']}"}) as api:
        fact = api.post(
            "/v1/memories",
            json={"type": "fact", "content": "Two reconciliation incidents came from partial writes"},
        )
        assert fact.status_code == 201, fact.text
        fact_id = fact.json()["id"]
    browser.get(f"{server.url}/ui/memories/{decision_id}")
    browser.find_element(By.ID, "target").send_keys(fact_id[:8])
    browser.find_element(By.ID, "relation").send_keys("supports")
    browser.find_element(By.XPATH, "//button[text()='Link']").click()
    _until(browser, lambda d: bool(d.find_elements(By.CSS_SELECTOR, "ul.graph li")))
    _shot(browser, shots, "5-linked")
    browser.find_element(By.PARTIAL_LINK_TEXT, "Two reconciliation incidents").click()
    _until(browser, lambda d: fact_id in d.current_url)
    back = browser.find_element(By.CSS_SELECTOR, "ul.graph li").text
    assert "supports" in back and "Move the payments ledger" in back
    assert len(list(shots.glob("*.png"))) == 5


def test_pages_fit_a_phone_follow_dark_mode_and_start_with_a_skip_link(
    served: tuple[LiveServer, dict[str, str]],  # noqa: F811
    browser: WebDriver,
    tmp_path: Path,
) -> None:
    server, keys = served
    shots = tmp_path / "screenshots"
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {keys['a']}"}) as api:
        long_word = "configuration-" * 12  # a long unbroken token must wrap, not widen the page
        made = api.post(
            "/v1/memories", json={"type": "fact", "content": f"The {long_word} file lives in /etc/nous"}
        )
        assert made.status_code == 201, made.text
        memory_id = made.json()["id"]
    browser.get(f"{server.url}/ui/login")
    browser.find_element(By.ID, "key").send_keys(keys["a"])
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _until(browser, lambda d: "/ui/login" not in d.current_url)

    browser.set_window_size(390, 844)  # a phone's width
    for path in (
        "/ui/",
        "/ui/memories",
        f"/ui/memories/{memory_id}",
        "/ui/context?text=where+is+the+file",
        "/ui/decisions",
        "/ui/censors",
        "/ui/sessions",
        "/ui/health",
    ):
        browser.get(server.url + path)
        _until(browser, lambda d: d.execute_script("return document.readyState") == "complete")
        overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, (path, overflow)  # nothing scrolls sideways
    _shot(browser, shots, "phone-health")

    browser.set_window_size(1280, 800)
    browser.get(f"{server.url}/ui/memories")
    light = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    browser.get(f"{server.url}/ui/memories")
    dark = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    assert _luminance(light) > 0.8 and _luminance(dark) < 0.2, (light, dark)
    _shot(browser, shots, "dark-memories")

    # the keyboard reaches the content first: Tab focuses the skip link, Enter moves to main
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(browser).send_keys(Keys.TAB).perform()
    focused = browser.switch_to.active_element
    assert focused.get_attribute("class") == "skip" and focused.is_displayed()
    focused.send_keys(Keys.ENTER)
    _until(browser, lambda d: d.current_url.endswith("#main"))


def _luminance(css_color: str) -> float:
    """0 (black) to 1 (white) for an ``rgb(r, g, b)`` colour."""
    red, green, blue = (
        int(part) for part in css_color[css_color.index("(") + 1 : css_color.index(")")].split(",")[:3]
    )
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


# Every word of a table cell (and of a memory's text) on one line: the browser's line boxes of
# each word, from Range.getClientRects, must share one top. Returns the words split across lines
# and how many words were looked at.
SPLIT_WORDS = """
const found = [];
let looked = 0;
for (const element of document.querySelectorAll(arguments[0])) {
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const word of node.data.matchAll(/[\\p{L}\\p{N}]{2,}/gu)) {
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      looked += 1;
      if (lines.size > 1) found.push(`${word[0]} (in “${element.textContent.trim().slice(0, 50)}”)`);
    }
  }
}
return [found, looked];
"""


async def _realistic(settings: Settings) -> dict[str, str]:
    """Keys, and what the inspector's tables show in use: sessions of named users with real
    questions, an ingested conversation (a long stored session id), resolved decisions, a censor,
    an edited fact and a dead event."""
    from datetime import timedelta

    from nous.events import EventWorker
    from nous.ingest import parse_conversation
    from nous.models.events import EventKind

    keys = await _keys(settings)
    async with Nous(settings.model_copy(update={"agent_id": "agent-a"})) as nous:
        for session, user, said, reply in (
            (
                "onboarding-alice",
                "alice",
                "Which questionnaire do new accessibility reviewers fill in before their first audit?",
                "The onboarding questionnaire in the reviewers' handbook, section two.",
            ),
            (
                "ledger-migration",
                "bartholomew",
                "Can you summarise the reconciliation incidents from the PostgreSQL migration rehearsal?",
                "Two incidents: partial writes during the backfill and a timezone mismatch.",
            ),
        ):
            await nous.pre_turn(session, said, user_id=user)
            await nous.post_turn(session, reply)
        conversation = {
            "id": "customer-support-transcripts-2026-03",
            "sessions": [
                {
                    "id": "escalation-wheelchair-accessible-venue-booking",
                    "started_at": "2026-03-02T09:15:00Z",
                    "messages": [
                        {
                            "role": "user",
                            "content": "Our offsite venue in Lisbon needs step-free access for a wheelchair user.",
                        },
                        {
                            "role": "assistant",
                            "content": "I will shortlist venues with step-free access near Alfama.",
                        },
                        {
                            "role": "user",
                            "content": "Please also confirm the venue's accessible bathrooms and lifts.",
                        },
                    ],
                }
            ],
        }
        await nous.ingest(parse_conversation(json.dumps(conversation)))
        for confidence, outcome in ((0.9, "success"), (0.75, "failure"), (0.3, "failure")):
            decided = await nous.record_decision(
                f"Adopt incremental typechecking at confidence {confidence}",
                confidence=confidence,
                category="tooling",
            )
            await nous.review_decision(decided.id, outcome)
        await nous.add_censor(
            r"force[- ]push.*main", action="warn", reason="it rewrote the shared release history"
        )
        fact = await nous.learn("Deployments to production happen on Tuesdays after the standup")
        await nous.update(
            fact.memory.id, content="Deployments to production happen on Thursdays after the retrospective"
        )

        async def broken(event: Any, ctx: Any) -> list[Any]:
            raise RuntimeError("the summariser could not reach its configuration repository")

        worker = EventWorker(
            nous.pipeline_context(),
            handlers={kind: [broken] for kind in EventKind},
            max_attempts=1,
            retry_base=timedelta(milliseconds=1),
        )
        await worker.drain()
        assert await nous.build_threads() > 0
        (thread, *_) = await nous.threads(query="wheelchair accessible venue")
        return keys | {"fact": fact.memory.id, "thread": thread.id}


def test_tables_keep_their_words_whole_on_a_desktop_and_a_phone(
    database_url: str, settings: Settings, browser: WebDriver, tmp_path: Path
) -> None:
    run = settings.model_copy(update={"database_url": database_url})
    with live(run, _realistic) as (server, made):
        browser.get(f"{server.url}/ui/login")
        browser.find_element(By.ID, "key").send_keys(made["a"])
        browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        _until(browser, lambda d: "/ui/login" not in d.current_url)
        pages = (
            "/ui/sessions",
            "/ui/sessions/onboarding-alice",
            "/ui/decisions",
            "/ui/health",
            f"/ui/memories/{made['fact']}",
            "/ui/memories",
            "/ui/memories?kind=fact",
            "/ui/memories?kind=episode",
            "/ui/memories?q=accessibility+needs",
            "/ui/censors",
            "/ui/threads",
            f"/ui/threads/{made['thread']}",
        )
        tables = 0
        for width, height in ((1280, 800), (390, 844)):
            browser.set_window_size(width, height)
            for path in pages:
                browser.get(server.url + path)
                _until(browser, lambda d: d.execute_script("return document.readyState") == "complete")
                # counted by script: ``find_elements`` waits out the implicit wait (10 s) on a page
                # with none
                tables += browser.execute_script("return document.querySelectorAll('table').length")
                split, looked = browser.execute_script(SPLIT_WORDS, "th, td, .content")
                assert looked, (path, width)
                _shot(browser, tmp_path / "screenshots", f"{width}{path.replace('/', '-')[:60]}")
                assert not split, (path, width, split)
                overflow = browser.execute_script(
                    "return document.documentElement.scrollWidth - window.innerWidth"
                )
                assert overflow <= 1, (path, width, overflow)  # a wide table scrolls in its wrapper
        assert tables >= 2 * 9  # sessions, calibration (2), health (5), the history's changes
        browser.set_window_size(390, 844)
        browser.get(f"{server.url}/ui/sessions")
        ingested = browser.find_element(By.CSS_SELECTOR, "a.id[title*='escalation-wheelchair']")
        assert (ingested.get_attribute("title") or "").endswith(
            "escalation-wheelchair-accessible-venue-booking"
        )
        # the long id is cut with an ellipsis, not wrapped: one line, narrower than its text
        assert browser.execute_script(
            "const a = arguments[0]; return a.getClientRects().length === 1 && a.scrollWidth > a.clientWidth",
            ingested,
        )
        text = browser.find_element(By.TAG_NAME, "table").text
        assert "alice" in text and "bartholomew" in text
        # the thread page: its members in time order, the venue's first request before its follow-up
        browser.set_window_size(1280, 800)
        browser.get(f"{server.url}/ui/threads/{made['thread']}")
        page = browser.find_element(By.ID, "main").text
        first, follow_up = page.find("step-free access"), page.find("accessible bathrooms")
        assert 0 <= first < follow_up, page
