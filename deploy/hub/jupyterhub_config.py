# JupyterHub configuration for a class on one machine. Started by
# deploy/hub/hub.py (`python course.py hub`), which checks the inputs and passes them in
# COURSE_HUB_* environment variables; nothing secret lives in this file.
#
# What it sets up (docs/instructor_guide.md, "Deploying for a class"):
# * the hub, its proxy and every student server on 127.0.0.1 (or --ip);
# * FirstUseAuthenticator restricted to the roster: each student chooses a
#   password at first login, so nobody can open a classmate's server afterwards;
# * one server per student in homes/<name>, JupyterLab as the UI: as root, each as the
#   student's own Unix account with a memory cap (spawner.CourseSpawner, accounts.py),
#   from a venv every account can run; else SimpleLocalProcessSpawner, as the hub's user;
# * the course copied into each home on every start (as the student), never over edits;
# * idle servers culled by jupyterhub-idle-culler.
import asyncio
import os
import pwd
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import accounts  # noqa: E402  (needs the line above)
import provision  # noqa: E402

c = get_config()  # noqa: F821 — provided by JupyterHub when it loads this file

env = os.environ
RUNTIME = Path(env["COURSE_HUB_RUNTIME"])
HOMES = Path(env["COURSE_HUB_HOMES"])
VENV_BIN = Path(sys.executable).parent          # the hub runs from the course's .venv
IP = env.get("COURSE_HUB_IP", "127.0.0.1")
USERS = {u for u in env.get("COURSE_HUB_USERS", "").split(",") if u}
ADMINS = {u for u in env.get("COURSE_HUB_ADMINS", "").split(",") if u}
VERSION = env.get("COURSE_HUB_VERSION", "student")
ISOLATED = env.get("COURSE_HUB_ISOLATION") == "accounts"
SERVERS_BIN = Path(env.get("COURSE_HUB_SERVERS_BIN", str(VENV_BIN)))

# ---------------------------------------------------------------- network
c.JupyterHub.bind_url = f"http://{IP}:{env['COURSE_HUB_PORT']}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(env["COURSE_HUB_API_PORT"])
# The pip implementation of configurable-http-proxy (requirements.txt).
c.ConfigurableHTTPProxy.command = [str(VENV_BIN / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env['COURSE_HUB_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.should_start = True

# ---------------------------------------------------------------- state (all in runtime/, git-ignored)
c.JupyterHub.db_url = f"sqlite:///{RUNTIME / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(RUNTIME / "jupyterhub_cookie_secret")  # made at first start
c.JupyterHub.pid_file = str(RUNTIME / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(RUNTIME / "proxy.pid")

# ---------------------------------------------------------------- who may log in
c.JupyterHub.authenticator_class = "firstuseauthenticator.FirstUseAuthenticator"
c.FirstUseAuthenticator.dbm_path = str(RUNTIME / "passwords.dbm")
c.FirstUseAuthenticator.create_users = False     # only the roster below
c.FirstUseAuthenticator.min_password_length = 8
c.Authenticator.allowed_users = USERS
c.Authenticator.admin_users = ADMINS
c.JupyterHub.admin_access = False                # admins manage servers, not read files

# ---------------------------------------------------------------- one server per student
if ISOLATED:
    from spawner import CourseSpawner  # noqa: E402

    c.JupyterHub.spawner_class = CourseSpawner
    c.CourseSpawner.account_prefix = env["COURSE_HUB_ACCOUNT_PREFIX"]
    import limits  # noqa: E402

    GROUPS = limits.detect(limits.Limits(
        cpu=float(env["COURSE_HUB_CPU_LIMIT"]), memory=int(env["COURSE_HUB_MEM_LIMIT"]),
        pids=int(env["COURSE_HUB_PIDS_LIMIT"]), file_size=int(env["COURSE_HUB_FILE_LIMIT"])),
        want=env["COURSE_HUB_LIMITS"], tag=env["COURSE_HUB_ACCOUNT_PREFIX"] + "hub")
    c.CourseSpawner.groups = GROUPS
    c.CourseSpawner.disk_file = str(Path(env["COURSE_HUB_RECORDS"]) / "disk.json")
    c.CourseSpawner.board_gid = pwd.getpwnam(env["COURSE_HUB_ACCOUNT_PREFIX"] + accounts.BOARD).pw_gid
else:
    c.JupyterHub.spawner_class = "simple"        # jupyterhub.spawner.SimpleLocalProcessSpawner
    c.SimpleLocalProcessSpawner.home_dir_template = str(HOMES / "{username}")
c.Spawner.ip = "127.0.0.1"
c.Spawner.cmd = [str(SERVERS_BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab/tree/notebooks/00_start_here.ipynb"
c.Spawner.args = [
    "--ServerApp.port_retries=0",
    "--LabApp.news_url=",                       # offline: no news feed
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
]
if os.geteuid() == 0 and not ISOLATED:
    c.Spawner.args.append("--allow-root")       # --shared-unix-user as root: servers as root
c.Spawner.environment = {
    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",   # the course never downloads
    # Many kernels share few cores: one thread each for PyTorch and the BLAS libraries.
    **{v: env.get("COURSE_HUB_THREADS", "1") for v in
       ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
    # Explorers draw the next slider values ahead while a learner pauses: CPU a shared
    # machine may not have to spare (COURSE_HUB_LOOK_AHEAD=1 turns it on).
    "COURSE_LOOK_AHEAD": env.get("COURSE_HUB_LOOK_AHEAD", "0"),
    # show_solution() answers "ask your instructor" unless the hub was started with --solutions.
    "COURSE_SOLUTIONS": env.get("COURSE_HUB_SOLUTIONS", "off"),
}
if ISOLATED:   # the servers' venv first; nothing of the hub's own environment
    c.Spawner.environment.update({"PATH": f"{SERVERS_BIN}:/usr/local/bin:/usr/bin:/bin",
                                  "VIRTUAL_ENV": str(SERVERS_BIN.parent)})
# The test suite's network guard follows the servers and kernels it starts.
c.Spawner.env_keep = ["PATH", "PYTHONPATH", "LANG", "LC_ALL", "VIRTUAL_ENV",
                      "COURSE_NETGUARD_LOG"]
c.Spawner.start_timeout = 120                    # a busy 2-core machine starts servers slowly
c.Spawner.http_timeout = 120


async def copy_course(spawner):
    """Before a student's server starts: the course into their home, edits kept.
    In a thread: a class logging in at once must not stall the hub's event loop."""
    home = Path(spawner.home_dir)
    for line in await asyncio.to_thread(provision.provision, home, VERSION):
        spawner.log.warning(line)


async def copy_course_as_student(spawner):
    """The same, run as the student's account: root never writes in a student's home (a
    link planted there would otherwise send root's writes anywhere)."""
    entry = pwd.getpwnam(spawner.account)
    command = [str(SERVERS_BIN / "python"), str(HERE / "provision.py"), entry.pw_dir,
               "--version", VERSION]
    child_env = {"HOME": entry.pw_dir, "PATH": f"{SERVERS_BIN}:/usr/bin:/bin", "PYTHONUTF8": "1"}
    r = await asyncio.to_thread(accounts.run_as, entry, command, env=child_env)
    for line in r.stdout.splitlines():
        spawner.log.warning(line)
    if r.returncode != 0:
        raise RuntimeError(f"copying the course into {entry.pw_dir} failed: "
                           f"{(r.stderr.strip().splitlines() or ['?'])[-1]}")


DISK_RESERVE = float(env.get("COURSE_HUB_DISK_RESERVE", "0.05"))


async def before_start(spawner):
    """No server starts on a nearly full disk (the hub's database and every classmate's
    saves share it); then the course into the student's home."""
    import limits

    refusal = await asyncio.to_thread(limits.disk_refusal, HOMES, DISK_RESERVE)
    if refusal:
        raise RuntimeError(refusal)
    await (copy_course_as_student if ISOLATED else copy_course)(spawner)


c.Spawner.pre_spawn_hook = before_start

# Each student's checkers write their verdicts (and hints, never code) where the board reads.
RECORDS = Path(env["COURSE_HUB_RECORDS"])
# An instructor's own checks stay in their home ("" = the default place): not on the board.
c.Spawner.environment["COURSE_PROGRESS_FILE"] = lambda spawner: (
    "" if spawner.user.name in ADMINS else str(RECORDS / spawner.user.name / "progress.json"))

# ---------------------------------------------------------------- idle culling, and the course's own service
CULL_TIMEOUT = int(env.get("COURSE_HUB_CULL_TIMEOUT", "3600"))
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                f"--timeout={CULL_TIMEOUT}", f"--cull-every={max(CULL_TIMEOUT // 6, 10)}"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
# The class board (deploy/board/service.py), for the instructors (the hub's admins) only.
BOARD_SCOPE = "custom:class-board:view"
board_service = {
    "name": "class-board",
    "url": f"http://127.0.0.1:{env['COURSE_HUB_BOARD_PORT']}",
    "command": [str(SERVERS_BIN / "python"), str(HERE.parent / "board" / "service.py")],
    "environment": {"COURSE_BOARD_RECORDS": str(RECORDS), "PYTHONUTF8": "1",
                    "COURSE_BOARD_DISK_SHARE": env.get("COURSE_HUB_DISK_SHARE", "0") if ISOLATED else "0",
                    "PATH": f"{SERVERS_BIN}:/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    "oauth_no_confirm": True,
    "oauth_client_allowed_scopes": [BOARD_SCOPE],
}
if ISOLATED:                 # its own account: the records' group, nothing of the homes
    board_service["user"] = env["COURSE_HUB_ACCOUNT_PREFIX"] + accounts.BOARD
c.JupyterHub.services.append(board_service)
c.JupyterHub.custom_scopes = {BOARD_SCOPE: {
    "description": "See the class board: every student's verdicts, the hints they see and their concept-check answers"}}
c.JupyterHub.load_roles.append({"name": "teacher", "users": sorted(ADMINS),
                                "scopes": [BOARD_SCOPE, "access:services!service=class-board"]})

if env.get("COURSE_HUB_SERVICE_TOKEN"):
    # Tests and the load benchmark drive the hub with this admin token (made
    # at random by whoever starts the hub; never written to disk).
    c.JupyterHub.services.append({"name": "course-admin",
                                  "api_token": env["COURSE_HUB_SERVICE_TOKEN"]})
    c.JupyterHub.load_roles.append({
        "name": "course-admin",
        "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users"],
        "services": ["course-admin"],
    })
