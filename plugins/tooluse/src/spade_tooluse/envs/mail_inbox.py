"""A mailbox with many similar tools: count, star, file and mark messages."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

SENDERS = ["ines@corp.example", "olu@corp.example", "pavel@vendor.example", "quinn@bank.example", "rosa@corp.example"]
SUBJECTS = ["Invoice 4411", "Lunch?", "Quarterly numbers", "Invoice overdue", "Offsite agenda", "Password reset",
            "Re: invoice question", "Welcome!", "Standup notes", "Contract draft"]


class MailInboxEnv(ToolEnv):
    description = "You manage a user's mailbox. Folders: inbox, archive, finance."
    advance_on = "reply"
    INBOX = 7
    ARCHIVED = 2
    # what an edit may change (spade_designer.knobs): messages in the inbox and in the archive
    KNOBS = {"INBOX": (int, 3, 8), "ARCHIVED": (int, 0, 2)}
    HARDER = {"INBOX": "higher", "ARCHIVED": "higher"}
    tools = [
        function_schema("list_messages", "Messages in a folder.", {"folder": {"type": "string"}}, ["folder"]),
        function_schema("search_messages", "Messages (any folder) whose subject contains the text.", {"text": {"type": "string"}}, ["text"]),
        function_schema("count_unread", "Number of unread messages in a folder.", {"folder": {"type": "string"}}, ["folder"]),
        function_schema("mark_read", "Mark a message read.", {"message_id": {"type": "string"}}, ["message_id"]),
        function_schema("star_message", "Star a message.", {"message_id": {"type": "string"}}, ["message_id"]),
        function_schema("move_message", "Move a message to a folder.", {"message_id": {"type": "string"}, "folder": {"type": "string"}},
                        ["message_id", "folder"]),
        function_schema("delete_message", "Delete a message for good.", {"message_id": {"type": "string"}}, ["message_id"]),
        function_schema("send_message", "Send a new message.", {"to": {"type": "string"}, "subject": {"type": "string"}}, ["to", "subject"]),
    ]

    def build(self):
        rng = self.rng
        messages = {}
        for n, subject in enumerate(rng.sample(SUBJECTS, self.INBOX + self.ARCHIVED)):
            messages["m" + str(n + 1)] = {"sender": rng.choice(SENDERS), "subject": subject,
                                          "folder": "inbox" if n < self.INBOX else "archive", "read": rng.random() < 0.4, "starred": False}
        messages["m1"]["subject"] = "Invoice " + str(rng.randint(1000, 9999))
        unread = sum(1 for m in messages.values() if m["folder"] == "inbox" and not m["read"])
        sender = messages["m" + str(rng.randint(1, self.INBOX))]["sender"]
        from_sender = sorted(k for k, m in messages.items() if m["sender"] == sender)
        invoices = sorted(k for k, m in messages.items() if "invoice" in m["subject"].lower())
        self.state = {"messages": messages, "sent": []}
        return [
            Turn(user="How many unread messages are in my inbox? Answer with the number.",
                 calls=[call("count_unread", folder="inbox")], outputs=[str(unread)]),
            Turn(user="Star every message from " + sender + ".",
                 calls=[call("list_messages", folder="inbox"), call("list_messages", folder="archive")]
                 + [call("star_message", message_id=k) for k in from_sender]),
            Turn(user="Move every message with 'invoice' in the subject to the finance folder and mark them read.",
                 calls=[call("search_messages", text="invoice")]
                 + [c for k in invoices for c in (call("move_message", message_id=k, folder="finance"), call("mark_read", message_id=k))]),
        ]

    def _message(self, message_id):
        m = self.state["messages"].get(message_id)
        if m is None:
            raise ToolError("no message " + message_id)
        return m

    def tool_list_messages(self, folder):
        return [dict(m, message_id=k) for k, m in sorted(self.state["messages"].items()) if m["folder"] == folder]

    def tool_search_messages(self, text):
        return [dict(m, message_id=k) for k, m in sorted(self.state["messages"].items()) if text.lower() in m["subject"].lower()]

    def tool_count_unread(self, folder):
        return sum(1 for m in self.state["messages"].values() if m["folder"] == folder and not m["read"])

    def tool_mark_read(self, message_id):
        self._message(message_id)["read"] = True
        return "ok"

    def tool_star_message(self, message_id):
        self._message(message_id)["starred"] = True
        return "ok"

    def tool_move_message(self, message_id, folder):
        if folder not in ("inbox", "archive", "finance"):
            raise ToolError("no folder " + folder)
        self._message(message_id)["folder"] = folder
        return "ok"

    def tool_delete_message(self, message_id):
        self._message(message_id)
        del self.state["messages"][message_id]
        return "ok"

    def tool_send_message(self, to, subject):
        self.state["sent"].append({"to": to, "subject": subject})
        return "sent"
