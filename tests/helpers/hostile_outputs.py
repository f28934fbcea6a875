"""The probe that opens a page in headless Chromium and reads what a submission's own script did there: the markers
of perfaudit/fixtures/catalog/student_html.py, dialogs, console lines."""


def scripts_that_ran(page, url):
    """Open url in page, click every link the submission wrote, and return what ran: (markers set, dialogs opened,
    console lines naming a marker). Listens before the page loads, so nothing that runs at load is missed."""
    from perfaudit.fixtures.catalog.student_html import LINKS

    dialogs, console = [], []
    # nbconvert wraps a JavaScript output in code that calls jQuery's $, which Formgrader's page loads: a stand-in,
    # so that such an output runs here too wherever it is left in a page.
    page.add_init_script("window.$ = window.$ || function () { return null; };")
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("console", lambda message: console.append(message.text))
    page.goto(url, wait_until="domcontentloaded")
    try:
        page.wait_for_load_state("load", timeout=15_000)  # images and inline scripts; a CDN that is not there fails
    except Exception:  # noqa: BLE001 - a page still loading an unreachable script is read as it is
        pass
    for text in LINKS:
        links = page.locator("a", has_text=text)
        for index in range(links.count()):
            if links.nth(index).get_attribute("href") is not None:
                links.nth(index).click(no_wait_after=True)
    page.wait_for_timeout(500)  # a click's script runs at once; this is only for the browser to get to it
    markers = set(page.evaluate("window.__pwned || []"))
    return markers, dialogs, [line for line in console if "pwned" in line]


def page_text(page):
    return page.evaluate("document.body.innerText")
