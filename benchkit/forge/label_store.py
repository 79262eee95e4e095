"""The store's labels and milestones: a repository's own, and the labels on an issue."""

from .issue_store import IssueStore


class LabelStore(IssueStore):
    """Labels and milestones; putting a label on an issue, or taking it off, is a timeline
    event of the issue."""

    # -- a repository's labels ------------------------------------------------------
    def labels(self, repo_id: int) -> list[dict]:
        """The repository's labels, by name."""
        return self.all("SELECT * FROM labels WHERE repo_id = ? ORDER BY name, id", repo_id)

    def labels_by_ids(self, repo_id: int, ids: list[int]) -> list[dict]:
        """The repository's labels with these ids; ids of none drop out."""
        if not ids:
            return []
        return self.all(f"SELECT * FROM labels WHERE repo_id = ? AND id IN ({','.join('?' * len(ids))})",
                        repo_id, *ids)

    def labels_named(self, repo_id: int, names: list[str]) -> list[dict]:
        """The repository's labels with these names; names of none drop out."""
        return self.all(f"SELECT * FROM labels WHERE repo_id = ? AND name IN ({','.join('?' * len(names))})",
                        repo_id, *names)

    def delete_label(self, label_id: int) -> None:
        """The label, off every issue it is on."""
        with self.tx():
            self.execute("DELETE FROM issue_labels WHERE label_id = ?", label_id)
            self.execute("DELETE FROM labels WHERE id = ?", label_id)

    def labelled(self, label_id: int) -> set[int]:
        """The ids of the issues the label is on."""
        return {row["issue_id"] for row in self.all("SELECT issue_id FROM issue_labels WHERE label_id = ?", label_id)}

    # -- the labels on an issue -------------------------------------------------------
    def issue_labels(self, issue_id: int) -> list[dict]:
        """The labels on the issue, by name."""
        return self.all("SELECT labels.* FROM issue_labels JOIN labels ON labels.id = issue_labels.label_id "
                        "WHERE issue_id = ? ORDER BY labels.name", issue_id)

    def add_labels(self, issue_id: int, labels: list[dict], actor_id: int | None = None) -> None:
        """Attach labels; with an actor, each newly added one is a timeline event."""
        present = {label["id"] for label in self.issue_labels(issue_id)}
        for label in labels:
            if label["exclusive"] and "/" in label["name"]:
                self._drop_scope(issue_id, label, actor_id)
            if label["id"] not in present:
                self.execute("INSERT INTO issue_labels (issue_id, label_id) VALUES (?, ?)", issue_id, label["id"])
                present.add(label["id"])
                if actor_id:
                    self.event(issue_id, actor_id, "label", "1", label_id=label["id"])
        self.touch(issue_id)

    def remove_label(self, issue_id: int, label_id: int, actor_id: int) -> None:
        """Take a label off the issue; with an actor, an event when it was on."""
        if self.one("SELECT 1 FROM issue_labels WHERE issue_id = ? AND label_id = ?", issue_id, label_id):
            self.execute("DELETE FROM issue_labels WHERE issue_id = ? AND label_id = ?", issue_id, label_id)
            self.event(issue_id, actor_id, "label", "", label_id=label_id)
        self.touch(issue_id)

    def _drop_scope(self, issue_id: int, label: dict, actor_id: int | None) -> None:
        # An exclusive scoped label (scope/value) replaces the issue's others in its scope.
        scope = label["name"].rsplit("/", 1)[0] + "/"
        for other in self.issue_labels(issue_id):
            if other["id"] != label["id"] and other["name"].startswith(scope):
                self.remove_label(issue_id, other["id"], actor_id or 0)

    def clear_labels(self, issue_id: int, actor_id: int) -> None:
        """Take every label off the issue, each an event."""
        for label in self.issue_labels(issue_id):
            self.remove_label(issue_id, label["id"], actor_id)

    # -- milestones -----------------------------------------------------------------------
    def milestones(self, repo_id: int) -> list[dict]:
        """The repository's milestones, oldest first."""
        return self.all("SELECT * FROM milestones WHERE repo_id = ? ORDER BY id", repo_id)

    def milestone_counts(self, milestone_id: int) -> dict:
        """The milestone's open and closed issues: {"open": n, "closed": n} (None for a
        milestone without any)."""
        return self.must("SELECT SUM(state = 'open') AS open, SUM(state = 'closed') AS closed FROM issues "
                         "WHERE milestone_id = ?", milestone_id)

    def delete_milestone(self, milestone_id: int) -> None:
        """The milestone, its issues left without one."""
        with self.tx():
            self.execute("UPDATE issues SET milestone_id = 0 WHERE milestone_id = ?", milestone_id)
            self.execute("DELETE FROM milestones WHERE id = ?", milestone_id)
