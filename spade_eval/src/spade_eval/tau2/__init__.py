r"""tau2-bench as an episode suite of ``spade eval`` (``--suite tau2_bench``).

tau2-bench's own package cannot be installed here (it is not on the package registry; the
registry's ``tau2`` is an unrelated library), so this is an adapter written against the
benchmark's published formats and scoring rules, not its code:

* **Data** (``-o data=FOLDER``): tau2-bench's ``data/tau2/domains`` layout, a folder per
  domain holding ``tasks.json`` (a list of tasks: ``id``, ``user_scenario.instructions``,
  ``initial_state``, ``evaluation_criteria`` with ``actions`` (name + arguments, by the
  ``assistant`` or the ``user``), ``communicate_info``, ``env_assertions``,
  ``nl_assertions``, ``reward_basis``), the domain's database ``db.json`` (or ``db.toml``,
  as the telecom domain ships it; a dual-control domain's ``user_db.json``/``.toml``, if
  any, is merged into its default user database) and its ``policy.md`` (or telecom's
  ``main_policy.md`` with ``tech_support_manual.md``, joined as the benchmark joins them);
  or one such domain folder. ``-o split=NAME`` keeps the tasks of one split of the domain's
  ``split_tasks.json``.
* **A conversation** (half duplex, as the benchmark plays it): the agent is taken to open
  with "Hi! How can I help you today?"; the simulated user (``-o user=openai:URL#MODEL``)
  answers from the task's scenario; each agent message either calls tools (``<tool_call>``
  tags, run in order on this episode's in-memory copy of the domain database, results
  returned) or speaks to the user, who replies. In a dual-control domain (telecom) the user
  has tools too (:data:`USER_SIDES`): they go to the user model as OpenAI declarations, and
  before it says anything to the agent it may call them, any number of rounds, on its own
  side of the world (the results go back to it, never to the agent); after every call the
  domain's sync carries the agent's database to the user's (line active, roaming allowed,
  data over the limit, payment requests). The episode ends when the user's message holds
  ``###STOP###``, ``###TRANSFER###`` or ``###OUT-OF-SCOPE###``, or the agent's holds
  ``###STOP###``; after :data:`MAX_ERRORS` failed tool calls (the agent's and the user's
  together, as the benchmark counts them), :data:`MAX_USER_TOOL_ROUNDS` user tool rounds or
  the turn limit it ends prematurely and scores 0, as the benchmark's ``too many
  errors``/``max steps`` do.
* **Score** (the benchmark's ``evaluate_simulation``, evaluation type ``all``): the
  product of the components in the task's ``reward_basis``: ``DB`` (the database after the
  conversation, and the user's database in a dual-control domain, equal those a fresh world
  reaches when the task's ``actions`` are replayed, each by its requestor, without a sync
  between them, as the benchmark's replay does), ``ENV_ASSERTION`` (each of the task's
  ``env_assertions``, a function of the agent's or the user's side run on the final world,
  answers its ``assert_value``; one that fails or answers no boolean does not hold),
  ``COMMUNICATE`` (every ``communicate_info`` string appears, case-insensitively, in an
  agent message with commas removed), ``ACTION`` (every expected action is matched by a
  call, the agent's or the user's, of that name whose arguments, all or the action's
  ``compare_args``, are equal), ``NL_ASSERTION`` (a judge model, ``-o
  judge=openai:URL#MODEL``, by default the simulated user's, says of each of the task's
  ``nl_assertions`` whether the conversation meets it; 1 when all are met, and 1 with no
  judge asked when there are none; a reply it cannot read is the episode's error,
  :class:`~.judge.JudgeReplyError`, not a score: :mod:`.judge`).
  A reward of 1 is a success; a domain's column is pass^1 (the mean over tasks of each
  task's share of successful trials); :func:`pass_hat_k` gives pass^k over the ``--size``
  trials per task.
* **Initial state**: ``initialization_data`` (``agent_data`` and, in a dual-control domain,
  ``user_data`` merged into the copies), then ``initialization_actions`` in order, each a
  function of the agent's or the user's side called by name (a tool, or one of the side's
  ``ENV_FUNCTIONS``) and followed by the sync; one that fails makes the task's data an error.

**Implemented**, on a copy of the task's ``db.json`` (:data:`DOMAINS`): the ``retail``
domain's whole tool set, :data:`RETAIL_TOOLS` (the lookups, ``calculate``,
``transfer_to_human_agents``, ``cancel_pending_order``, ``modify_pending_order_address``,
``modify_pending_order_items``, ``modify_pending_order_payment``, ``modify_user_address``,
``return_delivered_order_items``, ``exchange_delivered_order_items``; what the order-changing
ones leave is in :mod:`.retail`), its arguments checked against the declarations as
airline's are; the ``airline domain's whole tool set,
:data:`AIRLINE_TOOLS` (``book_reservation``, ``calculate``, ``cancel_reservation``,
``get_reservation_details``, ``get_user_details``, ``list_all_airports``,
``search_direct_flight``, ``search_onestop_flight``, ``send_certificate``,
``transfer_to_human_agents``, ``update_reservation_baggages``, ``update_reservation_flights``,
``update_reservation_passengers``, ``get_flight_status``) over ``flights``, ``users`` and
``reservations``, with the benchmark's checks, errors and database changes (new reservations
``HATHAT``, ``HATHAU``, ``HATHAV``; certificates ``certificate_3221322`` ...; booking time
2024-05-15T15:00:00; insurance 30 and a paid bag 50 dollars; a cancellation appends negative
payments and releases no seat; a flight change takes no seat), the arguments checked against
the declarations as the benchmark's argument models check them (integers leniently, undeclared
fields ignored). The ``telecom`` domain, dual control: the agent's whole tool set,
:data:`TELECOM_TOOLS` (``get_customer_by_phone``, ``get_customer_by_id``,
``get_customer_by_name``, ``get_details_by_id``, ``suspend_line``, ``resume_line``,
``get_bills_for_customer``, ``send_payment_request``, ``get_data_usage``, ``enable_roaming``,
``disable_roaming``, ``transfer_to_human_agents``, ``refuel_data``) over ``plans``,
``customers``, ``lines``, ``bills``, ``devices``, today being 2025-02-25; the user's whole
tool set on their phone, :data:`TELECOM_USER_TOOLS` (status bar, network status and mode,
speed test, airplane mode, SIM, mobile data, roaming, data saver, APN settings, Wi-Fi, Wi-Fi
calling, VPN, apps and their permissions, MMS, reboot, payment requests: thirty tools) with
the benchmark's network search, speeds and texts; the sync (:func:`telecom_sync`); the
environment functions its task files call (``TelecomTools.ENV_FUNCTIONS``,
``TelecomUserTools.ENV_FUNCTIONS``: the scenario, ways to break the phone, every ``assert_*``).
Ids and phone numbers are matched exactly (later benchmark versions also accept a
differently cased id or a differently written phone number, for their voice mode). A new
draft bill (a refuel with none open) is numbered ``Bd0000001``, ``Bd0000002``, ... where the
benchmark draws a random ``B`` + 8 hex digits. **Not implemented**, each reported by name
(the task's episodes fail with the reason and its column lists them as unavailable): the
other domains, the tools in :data:`NOT_IMPLEMENTED` (none of retail's, airline's or
telecom's published tools; a tool a task names that its domain lacks here), NL assertions
whose judge cannot be reached (:class:`~.judge.JudgeUnavailable`), an environment function a
task names that its side lacks,
user-side actions or data in a domain whose user has no tools here, and an initial state
carrying a message history.

**Modules**: :mod:`.tasks` (the task model, ``tasks.json`` and ``split_tasks.json``),
:mod:`.retail`, :mod:`.airline`, :mod:`.telecom` (each domain's tools and declarations; in
telecom the sync too, the user's phone in :mod:`.telecom_phone` and their tools over it in
:mod:`.telecom_user`), :mod:`.domains` (the implemented domains, what
a task needs that is not here, a domain folder's database and policy), :mod:`.world` (an
episode's databases and tools with the initial state applied; a tool call run),
:mod:`.scoring` (the reward components), :mod:`.judge` (``NL_ASSERTION``'s judge),
:mod:`.env` (:class:`Tau2Env`, the conversation),
:mod:`.suite` (the suite's items, pass^k); :mod:`._common` holds what they share.
"""

from ._common import NotImplementedInAdapter, Tau2DataError
from .airline import AIRLINE_NOT_IMPLEMENTED, AIRLINE_TOOLS, AirlineTools
from .domains import (
    DOMAINS,
    NOT_IMPLEMENTED,
    USER_SIDES,
    UserSide,
    check_supported,
    read_domain,
    side_functions,
)
from .env import AGENT_GREETING, MAX_AGENT_TURNS, MAX_ERRORS, MAX_USER_TOOL_ROUNDS, Tau2Env
from .judge import JudgeReplyError, JudgeUnavailable, NLJudge, Verdict, read_verdicts, resolve_judge
from .retail import RETAIL_NOT_IMPLEMENTED, RETAIL_TOOLS, RetailTools
from .suite import SUITE, pass_hat_k, pass_hat_ks, tau2_items
from .tasks import REWARD_TYPES, Action, Tau2Task, domain_folders, load_domain, parse_task
from .telecom import TELECOM_NOT_IMPLEMENTED, TELECOM_TOOLS, TelecomTools, telecom_sync
from .telecom_phone import default_telecom_user_db
from .telecom_user import TELECOM_USER_TOOLS, TelecomUserTools
from .world import World, canonical, initial_db, make_world, run_tool

__all__ = [
    "AGENT_GREETING", "AIRLINE_NOT_IMPLEMENTED", "AIRLINE_TOOLS", "Action", "AirlineTools", "DOMAINS",
    "JudgeReplyError", "JudgeUnavailable", "MAX_AGENT_TURNS", "MAX_ERRORS", "MAX_USER_TOOL_ROUNDS", "NLJudge",
    "NOT_IMPLEMENTED", "NotImplementedInAdapter", "RETAIL_NOT_IMPLEMENTED", "RETAIL_TOOLS", "REWARD_TYPES",
    "RetailTools", "SUITE", "TELECOM_NOT_IMPLEMENTED", "TELECOM_TOOLS", "TELECOM_USER_TOOLS", "Tau2DataError",
    "Tau2Env", "Tau2Task", "TelecomTools", "TelecomUserTools", "USER_SIDES", "UserSide", "Verdict", "World",
    "canonical", "check_supported", "default_telecom_user_db", "domain_folders", "initial_db", "load_domain",
    "make_world", "parse_task", "pass_hat_k", "pass_hat_ks", "read_domain", "read_verdicts", "resolve_judge",
    "run_tool", "side_functions", "tau2_items", "telecom_sync",
]
