"""What the browser tests' PageWatcher counts as a page error (no browser needed: requests
are stand-ins with the attributes Playwright's Request has)."""
from types import SimpleNamespace

import browser_support as bs


def _failed(watcher, url, failure):
    watcher._on_request_failed(SimpleNamespace(method="GET", url=url, failure=failure))


def test_an_explorer_figure_replaced_before_it_loaded_is_not_an_error():
    watcher = bs.PageWatcher()
    _failed(watcher, "blob:http://127.0.0.1:41583/98cb57f9", "net::ERR_ABORTED")
    assert watcher.problems() == [] and len(watcher.ignored) == 1


def test_a_blob_that_fails_otherwise_and_an_aborted_request_to_the_server_are_errors():
    watcher = bs.PageWatcher()
    _failed(watcher, "blob:http://127.0.0.1:41583/6f22", "net::ERR_FILE_NOT_FOUND")
    _failed(watcher, "http://127.0.0.1:41583/api/contents/x.ipynb", "net::ERR_ABORTED")
    problems = watcher.problems()
    assert len(problems) == 2, problems
    assert "ERR_FILE_NOT_FOUND" in problems[0] and "/api/contents/" in problems[1]


def test_once_the_page_is_closing_aborted_long_polls_are_expected():
    watcher = bs.PageWatcher(closing=True)
    _failed(watcher, "http://127.0.0.1:41583/api/events/subscribe", "net::ERR_ABORTED")
    assert watcher.problems() == []
