"""Sound, reference style: schedule jobs on one machine to meet a deadline budget; the
solution is computed with ``heapq`` (shortest job first), imported by nobody."""


class JobOrderEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.jobs = {chr(65 + i): rng.randint(1, 9) for i in range(4)}
        self.done_jobs = []
        self.clock = 0
        self.waiting = 0
        self.turn = 0
        best = sorted(self.jobs.values())
        self.best_wait = sum(sum(best[:i + 1]) for i in range(len(best)))
        listing = ", ".join(f"{k}={v}h" for k, v in self.jobs.items())
        return f"Jobs: {listing}. Run them one by one with \\boxed{{JOB}} to minimise the total finishing time.", {}

    def _play(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*([A-D])\s*\}", action)
        if not m or m.group(1) in self.done_jobs:
            return "Pick a job that has not run yet, e.g. \\boxed{A}.", 0.0, False, self.turn >= 20, {}
        job = m.group(1)
        self.clock += self.jobs[job]
        self.waiting += self.clock
        self.done_jobs.append(job)
        if len(self.done_jobs) == len(self.jobs):
            reward = 1.0 if self.waiting == self.best_wait else round(self.best_wait / self.waiting, 3)
            return f"All jobs done; total finishing time {self.waiting} (best {self.best_wait}).", reward, True, False, {}
        return f"{job} finished at {self.clock}h.", 0.0, False, self.turn >= 20, {}

    def solution(self):
        heap = [(v, k) for k, v in self.jobs.items()]
        heapq.heapify(heap)
        return ["\\boxed{%s}" % heapq.heappop(heap)[1] for _ in range(len(heap))]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
