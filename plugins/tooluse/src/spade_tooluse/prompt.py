'''The designer's instructions for the tool-use domain (our own words).'''

from __future__ import annotations

PROMPT_SPEC = '''\
Write ONE Python source file defining a multi-turn TOOL-USE environment: a simulated
software system (a bank, a shop, a file store, a scheduler, ...) that a user operates
through an assistant. The assistant acts only by calling the tools you define.

Rules
- Import only `from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema`
  and, if needed, random, json, re, math, collections, itertools, string, dataclasses, typing.
  No file, network or process access; no eval/exec/open; no dunder attributes other than
  __init__ / super().__init__ (you rarely need either).
- Subclass ToolEnv in a class whose name ends in `Env`. Set:
    description = one sentence on who the assistant serves and what the system is;
    advance_on  = "reply" (a request ends when the assistant replies without a tool call or
                  answers) or "check" (it ends as soon as the request is fulfilled);
    tools       = a list of OpenAI-format schemas; function_schema(name, description,
                  properties, required) builds one.
- For every schema write a method `tool_<name>(self, ...)` with exactly the schema's
  parameters: parameters listed in `required` have no default, all others default to None
  (or a value). A mismatch is rejected when the class is created.
- A tool reads and changes `self.state` and returns a JSON value (dict, list, str, number).
  For an expected failure (unknown id, not enough funds, a locked resource) raise
  ToolError("what went wrong and how to fix it") BEFORE changing anything.
- `build(self)` fills `self.state` (a JSON dict holding everything that matters, nothing
  else: the grader compares it exactly) using only `self.rng` for randomness, and returns a
  list of 3-5 `Turn`s. A Turn has the user's request (`user=`), the reference tool calls
  that fulfil it (`calls=[call("tool", arg=value), ...]`), optionally `outputs=[...]`
  (short strings the assistant's answer must contain, e.g. a number or a name) and
  `check=lambda state: ...` (an extra condition on the state).
- The reference calls are replayed on a fresh copy to produce the expected state after each
  request; the assistant passes a request when its state equals that state, the check holds
  and the outputs appear in its answer. Reward = fraction of requests passed.
- Make it genuinely multi-step: requests that need reading before writing, results of one
  tool feeding another, a failure to recover from, state carried across requests. Ids that
  tools create must be deterministic (counters in the state), so the user can refer to them.
- The reference calls must succeed for EVERY seed: derive every value in them from the
  state you generated.

Example

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema


class PantryEnv(ToolEnv):
    description = "You manage a shared office pantry."
    advance_on = "reply"
    tools = [
        function_schema("stock", "Units of every item."),
        function_schema("take", "Remove units of an item.",
                        {"item": {"type": "string"}, "units": {"type": "integer"}}, ["item", "units"]),
        function_schema("restock", "Order units of an item; each order adds exactly 6.",
                        {"item": {"type": "string"}}, ["item"]),
    ]

    def build(self):
        items = self.rng.sample(["tea", "coffee", "milk", "sugar", "oats"], 3)
        self.state = {"stock": {i: self.rng.randint(1, 5) for i in items}}
        low = min(items, key=lambda i: (self.state["stock"][i], i))
        n = self.state["stock"][low]
        return [
            Turn(user="Which item is lowest? Give its name.", calls=[call("stock")], outputs=[low]),
            Turn(user="Take all of it, then order more.",
                 calls=[call("take", item=low, units=n), call("restock", item=low)]),
            Turn(user="How many units of it do we have now? Answer with the number.",
                 calls=[call("stock")], outputs=["6"]),
        ]

    def tool_stock(self):
        return self.state["stock"]

    def tool_take(self, item, units):
        have = self.state["stock"].get(item)
        if have is None:
            raise ToolError("no item " + item)
        if units < 1 or units > have:
            raise ToolError("can take 1 to " + str(have) + " units of " + item)
        self.state["stock"][item] = have - units
        return {"item": item, "left": have - units}

    def tool_restock(self, item):
        if item not in self.state["stock"]:
            raise ToolError("no item " + item)
        self.state["stock"][item] += 6
        return {"item": item, "units": self.state["stock"][item]}

The assistant's messages hold `<tool_call>{"name": "take", "arguments": {"item": "tea",
"units": 2}}</tool_call>` tags (several allowed) and end a request with
`<answer>...</answer>`; the base class parses them, validates arguments against your
schemas, reports errors to the assistant, advances turns and computes the reward.
'''
