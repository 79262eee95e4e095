"""The forge's SQLite schema: one table per Gitea entity it serves (the store's parts,
listed in store.py, say how rows map to Gitea's model)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY, login TEXT NOT NULL UNIQUE COLLATE NOCASE, email TEXT NOT NULL,
  full_name TEXT NOT NULL DEFAULT '', is_admin INTEGER NOT NULL DEFAULT 0,
  created INTEGER NOT NULL, last_login INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS tokens (
  hash TEXT PRIMARY KEY, user_id INTEGER NOT NULL, name TEXT NOT NULL,
  scope TEXT NOT NULL DEFAULT 'all');
CREATE TABLE IF NOT EXISTS repos (
  id INTEGER PRIMARY KEY, owner_id INTEGER NOT NULL, name TEXT NOT NULL COLLATE NOCASE,
  description TEXT NOT NULL DEFAULT '', website TEXT NOT NULL DEFAULT '',
  private INTEGER NOT NULL DEFAULT 0, template INTEGER NOT NULL DEFAULT 0,
  archived INTEGER NOT NULL DEFAULT 0, default_branch TEXT NOT NULL DEFAULT 'main',
  next_number INTEGER NOT NULL DEFAULT 1, created INTEGER NOT NULL, updated INTEGER NOT NULL,
  UNIQUE (owner_id, name));
CREATE TABLE IF NOT EXISTS commits (
  sha TEXT NOT NULL, repo_id INTEGER NOT NULL, parents TEXT NOT NULL, message TEXT NOT NULL,
  author_id INTEGER NOT NULL, created INTEGER NOT NULL, tree TEXT NOT NULL,
  PRIMARY KEY (repo_id, sha));
CREATE TABLE IF NOT EXISTS branches (
  repo_id INTEGER NOT NULL, name TEXT NOT NULL, sha TEXT NOT NULL,
  PRIMARY KEY (repo_id, name));
CREATE TABLE IF NOT EXISTS labels (
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, name TEXT NOT NULL, color TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '', exclusive INTEGER NOT NULL DEFAULT 0,
  is_archived INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS milestones (
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, title TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '', state TEXT NOT NULL DEFAULT 'open',
  due_on INTEGER, created INTEGER NOT NULL, updated INTEGER NOT NULL, closed_at INTEGER);
CREATE TABLE IF NOT EXISTS issues (
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, number INTEGER NOT NULL,
  poster_id INTEGER NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL DEFAULT 'open', is_pull INTEGER NOT NULL DEFAULT 0,
  is_locked INTEGER NOT NULL DEFAULT 0, ref TEXT NOT NULL DEFAULT '',
  milestone_id INTEGER NOT NULL DEFAULT 0, due_date INTEGER,
  content_version INTEGER NOT NULL DEFAULT 0,
  created INTEGER NOT NULL, updated INTEGER NOT NULL, closed_at INTEGER,
  UNIQUE (repo_id, number));
CREATE TABLE IF NOT EXISTS issue_labels (
  issue_id INTEGER NOT NULL, label_id INTEGER NOT NULL, PRIMARY KEY (issue_id, label_id));
CREATE TABLE IF NOT EXISTS issue_assignees (
  issue_id INTEGER NOT NULL, user_id INTEGER NOT NULL, PRIMARY KEY (issue_id, user_id));
CREATE TABLE IF NOT EXISTS issue_dependencies (
  issue_id INTEGER NOT NULL, blocker_id INTEGER NOT NULL, PRIMARY KEY (issue_id, blocker_id));
CREATE TABLE IF NOT EXISTS comments (
  id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, poster_id INTEGER NOT NULL,
  body TEXT NOT NULL, created INTEGER NOT NULL, updated INTEGER NOT NULL,
  type TEXT NOT NULL DEFAULT 'comment', data TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS pulls (
  issue_id INTEGER PRIMARY KEY, head TEXT NOT NULL, base TEXT NOT NULL,
  head_sha TEXT NOT NULL, merge_base TEXT NOT NULL, merged INTEGER NOT NULL DEFAULT 0,
  merged_at INTEGER, merged_by INTEGER, merge_commit_sha TEXT,
  allow_maintainer_edit INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS reviews (
  id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, reviewer_id INTEGER NOT NULL,
  state TEXT NOT NULL, body TEXT NOT NULL DEFAULT '', commit_id TEXT NOT NULL,
  official INTEGER NOT NULL DEFAULT 0, dismissed INTEGER NOT NULL DEFAULT 0,
  created INTEGER NOT NULL, updated INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS review_comments (
  id INTEGER PRIMARY KEY, review_id INTEGER NOT NULL, issue_id INTEGER NOT NULL,
  poster_id INTEGER NOT NULL, path TEXT NOT NULL, body TEXT NOT NULL,
  new_position INTEGER NOT NULL DEFAULT 0, old_position INTEGER NOT NULL DEFAULT 0,
  commit_id TEXT NOT NULL, created INTEGER NOT NULL, updated INTEGER NOT NULL,
  patch TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS issue_pins (
  issue_id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, is_pull INTEGER NOT NULL,
  pin_order INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS releases (
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, tag_name TEXT NOT NULL,
  target TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL DEFAULT '',
  draft INTEGER NOT NULL DEFAULT 0, prerelease INTEGER NOT NULL DEFAULT 0,
  author_id INTEGER NOT NULL, created INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tags (
  repo_id INTEGER NOT NULL, name TEXT NOT NULL, sha TEXT NOT NULL, created INTEGER NOT NULL,
  PRIMARY KEY (repo_id, name));
CREATE TABLE IF NOT EXISTS commit_statuses (
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, sha TEXT NOT NULL, state TEXT NOT NULL,
  context TEXT NOT NULL DEFAULT 'default', description TEXT NOT NULL DEFAULT '',
  target_url TEXT NOT NULL DEFAULT '', creator_id INTEGER NOT NULL, created INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS issues_repo ON issues (repo_id, is_pull, state);
CREATE INDEX IF NOT EXISTS comments_issue ON comments (issue_id);
CREATE INDEX IF NOT EXISTS reviews_issue ON reviews (issue_id);
CREATE INDEX IF NOT EXISTS labels_repo ON labels (repo_id);
"""
