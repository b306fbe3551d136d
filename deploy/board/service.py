"""The class board as a JupyterHub service, at /services/class-board/ (issue 20 §3).

Started by the hub (jupyterhub_config.py), as its own Unix account when the hub runs as
root: that account may read the students' verdict records (RECORDS/<student>/, group
readable by it alone) and nothing else of theirs. Visitors log in through the hub's
OAuth; only a token carrying the scope `custom:class-board:view` — given to the hub's
admins by the `teacher` role — sees the page: a student gets 403. The same holds for
the class votes (?view=votes: the concept checks' answers, without names unless ?names=1).
"""
from __future__ import annotations

import os
import re
import secrets
import sys
from pathlib import Path

from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
from jupyterhub.utils import url_path_join
from tornado import ioloop, web

sys.path.insert(0, str(Path(__file__).resolve().parent))
import board  # noqa: E402
import votes  # noqa: E402

VIEW_SCOPE = "custom:class-board:view"


class BoardHandler(HubOAuthenticated, web.RequestHandler):
    """GET: the board, every lesson or ?lesson=NN, stuck students first (?sort=name: by
    name); re-read from the records each time."""

    hub_scopes = {VIEW_SCOPE}

    @web.authenticated
    def get(self):
        if self.get_argument("view", "") == "votes":
            return self.votes()
        lesson = self.get_argument("lesson", "") or None
        sort = "name" if self.get_argument("sort", "") == "name" else "stuck"
        records, unreadable = board.read_records(self.settings["records"])
        exercises = self.settings["exercises"]
        if lesson and lesson not in set(exercises.values()):
            raise web.HTTPError(400, f"no lesson {lesson!r}")
        built = board.build(records, exercises, lesson, unreadable,
                            numbers=self.settings["numbers"], sort=sort)
        share = self.settings["disk_share"]       # the one-machine hub measures the folders
        disk = board.read_disk(self.settings["records"]) if share else None
        page = board.render(built, sorted(set(exercises.values())), lesson, sort=sort,
                            disk=disk, share=share)
        self.set_header("Cache-Control", "no-store")
        self.finish(page)

    def votes(self):
        """The class votes: ?lesson=NN or ?question=2.q1 to narrow, ?names=1 to name the
        students behind each count, ?answer=hide to keep the right answers off the screen."""
        questions = self.settings["questions"]
        lesson = self.get_argument("lesson", "") or None
        question = self.get_argument("question", "") or None
        if lesson and not re.fullmatch(r"\d\d", lesson):   # a lesson without questions: an empty page
            raise web.HTTPError(400, f"a lesson is two digits, like 02; got {lesson!r}")
        if question and question not in {q.id for q in questions}:
            raise web.HTTPError(400, f"no concept check {question!r}")
        records, unreadable = board.read_records(self.settings["records"])
        page = votes.render_votes(
            votes.tallies(records, questions, lesson, question), questions, len(records),
            lesson, question, names=self.get_argument("names", "") == "1",
            show_answer=self.get_argument("answer", "") != "hide", unreadable=len(unreadable),
            refresh=board.refresh_control())
        self.set_header("Cache-Control", "no-store")
        self.finish(page)


def make_app() -> web.Application:
    prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"]
    return web.Application(
        [(prefix, BoardHandler),
         (url_path_join(prefix, "oauth_callback"), HubOAuthCallbackHandler),
         (prefix.rstrip("/"), web.RedirectHandler, {"url": prefix})],
        cookie_secret=secrets.token_bytes(32),      # per start: a restart asks to log in again
        records=Path(os.environ["COURSE_BOARD_RECORDS"]),
        exercises=board.exercise_lessons(),
        numbers=board.exercise_numbers(),           # read from the lessons once, at start
        questions=votes.concept_questions(),
        disk_share=int(os.environ.get("COURSE_BOARD_DISK_SHARE", "0")))


def main() -> None:
    url = os.environ["JUPYTERHUB_SERVICE_URL"]
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    # 127.0.0.1 behind `course.py hub`; in its own pod on Kubernetes, 0.0.0.0 (class-board.yaml).
    make_app().listen(port, address=os.environ.get("COURSE_BOARD_IP", "127.0.0.1"))
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
