"""A bank ledger whose transfer limit makes the obvious single transfer fail."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema


class BankLedgerEnv(ToolEnv):
    description = "You are a bank operations assistant. Accounts are identified by ids like ACC-1234."
    advance_on = "reply"
    ACCOUNTS = 4
    # what an edit may change (spade_designer.knobs): accounts in the ledger (three take part in the requests)
    KNOBS = {"ACCOUNTS": (int, 3, 8)}
    HARDER = {"ACCOUNTS": "higher"}
    tools = [
        function_schema("list_accounts", "List every account id with its owner name."),
        function_schema(
            "get_balance", "Balance of one account, in whole dollars.",
            {"account_id": {"type": "string", "description": "account id"}}, ["account_id"],
        ),
        function_schema(
            "transfer",
            "Move money between two accounts. A single transfer may not exceed the daily per-transfer limit.",
            {
                "source": {"type": "string", "description": "account to debit"},
                "target": {"type": "string", "description": "account to credit"},
                "amount": {"type": "integer", "description": "whole dollars, positive"},
            },
            ["source", "target", "amount"],
        ),
        function_schema("get_limit", "The current per-transfer limit in dollars."),
    ]

    def build(self):
        rng = self.rng
        names = rng.sample(["Ada", "Bo", "Cyd", "Dee", "Eli", "Fay", "Gus", "Hal"], self.ACCOUNTS)
        ids = ["ACC-" + str(n) for n in rng.sample(range(1000, 9999), self.ACCOUNTS)]
        limit = rng.choice([200, 250, 300])
        self.state = {
            "accounts": {i: {"owner": n, "balance": rng.randint(400, 900)} for i, n in zip(ids, names)},
            "limit": limit,
            "transfers": [],
        }
        a, b, c = ids[0], ids[1], ids[2]
        need = limit + rng.randint(20, limit - 20)  # more than one transfer allows
        if self.state["accounts"][a]["balance"] < need:
            # the sender must cover the request (drawn last, so no other seed's episode changes)
            self.state["accounts"][a]["balance"] = rng.randint(need, need + 300)
        first = limit
        rest = need - limit
        b_after = self.state["accounts"][b]["balance"] + need
        return [
            Turn(
                user=f"How much money does {names[0]} have?",
                calls=[call("list_accounts"), call("get_balance", account_id=a)],
                outputs=[str(self.state["accounts"][a]["balance"])],
            ),
            Turn(
                user=f"Send {need} dollars from {names[0]} to {names[1]}.",
                calls=[call("transfer", source=a, target=b, amount=first), call("transfer", source=a, target=b, amount=rest)],
            ),
            Turn(
                user=f"What is {names[1]}'s balance now? Then move 50 dollars from {names[1]} to {names[2]}.",
                calls=[call("get_balance", account_id=b), call("transfer", source=b, target=c, amount=50)],
                outputs=[str(b_after)],
            ),
        ]

    def _account(self, account_id):
        if account_id not in self.state["accounts"]:
            raise ToolError("no account " + account_id)
        return self.state["accounts"][account_id]

    def tool_list_accounts(self):
        return [{"account_id": i, "owner": a["owner"]} for i, a in sorted(self.state["accounts"].items())]

    def tool_get_balance(self, account_id):
        return {"account_id": account_id, "balance": self._account(account_id)["balance"]}

    def tool_get_limit(self):
        return {"limit": self.state["limit"]}

    def tool_transfer(self, source, target, amount):
        src = self._account(source)
        dst = self._account(target)
        if source == target:
            raise ToolError("source and target are the same account")
        if amount <= 0:
            raise ToolError("amount must be positive")
        if amount > self.state["limit"]:
            raise ToolError("transfer of " + str(amount) + " exceeds the per-transfer limit")
        if src["balance"] < amount:
            raise ToolError("insufficient funds in " + source)
        src["balance"] -= amount
        dst["balance"] += amount
        self.state["transfers"].append([source, target, amount])
        return {"status": "ok", "source_balance": src["balance"]}
