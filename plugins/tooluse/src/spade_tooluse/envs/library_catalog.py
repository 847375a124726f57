"""A library catalogue: count an author's books, find the oldest, check a copy out."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

AUTHORS = ["Ursula Vance", "Omar Haddad", "Keiko Mori", "Pieter Janssen", "Maria Sol"]
WORDS = ["River", "Glass", "Winter", "Orchard", "Lantern", "Harbor", "Cipher", "Meadow", "Atlas", "Ember", "Quarry", "Falcon"]


class LibraryCatalogEnv(ToolEnv):
    description = "You help patrons with the library catalogue."
    advance_on = "reply"
    BOOKS = 16
    # what an edit may change (spade_designer.knobs): books in the catalogue
    KNOBS = {"BOOKS": (int, 6, 24)}
    HARDER = {"BOOKS": "higher"}
    tools = [
        function_schema(
            "search_books", "Books matching an author's full name and/or a word in the title (at least one filter).",
            {"author": {"type": "string"}, "title_word": {"type": "string"}},
        ),
        function_schema("get_book", "Full record of a book: title, author, year, copies available.",
                        {"isbn": {"type": "string"}}, ["isbn"]),
        function_schema("checkout", "Lend one available copy of a book to the current patron.",
                        {"isbn": {"type": "string"}}, ["isbn"]),
    ]

    def build(self):
        rng = self.rng
        books = {}
        titles = rng.sample([a + " " + b for a in WORDS for b in WORDS if a != b], self.BOOKS)
        years = rng.sample(range(1950, 2024), self.BOOKS)
        for n in range(self.BOOKS):
            isbn = "978-" + str(rng.randint(1000000, 9999999)) + str(n % 10)
            books[isbn] = {"title": "The " + titles[n], "author": AUTHORS[n % 5] if n < 12 else AUTHORS[rng.randrange(5)],
                           "year": years[n], "copies": rng.randint(1, 3)}
        author = rng.choice(AUTHORS)
        theirs = sorted(k for k, v in books.items() if v["author"] == author)
        oldest = min(theirs, key=lambda k: books[k]["year"])
        self.state = {"books": books, "loans": []}
        return [
            Turn(
                user="How many books by " + author + " does the library have? Answer with the number.",
                calls=[call("search_books", author=author)],
                outputs=[str(len(theirs))],
            ),
            Turn(
                user="Which of them was published first? Give me its title.",
                calls=[call("get_book", isbn=k) for k in theirs],
                outputs=[books[oldest]["title"]],
            ),
            Turn(user="Please check that one out for me.", calls=[call("checkout", isbn=oldest)]),
        ]

    def tool_search_books(self, author=None, title_word=None):
        if author is None and title_word is None:
            raise ToolError("give an author or a title word")
        out = []
        for isbn, b in sorted(self.state["books"].items()):
            if author is not None and b["author"].lower() != author.lower():
                continue
            if title_word is not None and title_word.lower() not in b["title"].lower().split():
                continue
            out.append({"isbn": isbn, "title": b["title"]})
        return out

    def tool_get_book(self, isbn):
        book = self.state["books"].get(isbn)
        if book is None:
            raise ToolError("no book with isbn " + isbn)
        return dict(book, isbn=isbn)

    def tool_checkout(self, isbn):
        book = self.state["books"].get(isbn)
        if book is None:
            raise ToolError("no book with isbn " + isbn)
        if book["copies"] < 1:
            raise ToolError("no copy available")
        book["copies"] -= 1
        self.state["loans"].append(isbn)
        return {"isbn": isbn, "due_in_days": 21}
