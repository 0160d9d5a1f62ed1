"""``/docs`` in headless Chromium with the network closed to everything but the
server: Swagger UI comes from the package, runs under the strict policy without a
violation, and lists the operations of the served document."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Route, async_playwright, expect

from api.app import create_app
from tests.e2e.conftest import app_settings
from tests.support import browser as chromium
from tests.support import pg
from tests.support.live import serve

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def server(db: pg.TestDatabase) -> AsyncIterator[str]:
    with serve(create_app(app_settings(db))) as url:
        yield url


async def test_the_reference_renders_from_the_package_alone(server: str):
    origin = urlsplit(server).netloc
    refused: list[str] = []
    problems: list[str] = []

    async def only_the_server(route: Route) -> None:
        if urlsplit(route.request.url).netloc == origin:
            await route.continue_()
        else:
            refused.append(route.request.url)
            await route.abort()

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(chromium.chromium()),
                                          args=chromium.ARGS)
        try:
            context = await browser.new_context()
            await context.route("**/*", only_the_server)
            page = await context.new_page()
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("console", lambda m: problems.append(m.text)
                    if m.type == "error" else None)
            answer = await page.goto(f"{server}/docs")
            assert answer is not None and answer.ok
            policy = answer.headers["content-security-policy"]
            assert "script-src 'self';" in policy and "style-src 'self';" in policy
            assert "unsafe" not in policy and "img-src 'self' data:;" in policy
            await expect(page.locator(".swagger-ui .info .title")).to_contain_text(
                "Helpdesk", timeout=20_000)
            # Every tag's section is listed, and the operations in them.
            await expect(page.locator(".opblock-tag-section").first).to_be_visible()
            shown = await page.locator(".opblock-summary-path").all_inner_texts()
            listed = {text.replace("\u200b", "") for text in shown}
            assert {"/v1/tickets", "/v1/tickets/{ticket_id}/state",
                    "/v1/meta/error-codes", "/v1/portal/tickets"} <= listed, listed
            assert len(shown) >= 80
            # The security schemes are there to authorize with.
            await page.get_by_role("button", name="Authorize").first.click()
            await expect(page.get_by_text("portalToken")).to_be_visible()
            await page.locator("button.close-modal").click()
            # Open an operation: its parameters and answers render too.
            await page.locator(".opblock-summary-path", has_text="/v1/meta/error-codes").click()
            await expect(page.locator(".opblock-body .responses-table").first).to_be_visible()
        finally:
            await browser.close()
    assert refused == [], refused
    assert problems == [], problems
