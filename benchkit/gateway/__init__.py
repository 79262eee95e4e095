"""The trial gateway: the one door between an agent's tools and the Gitea host, and so
the security boundary on the network side (docs/security.md).

`server` serves it (a throwaway token per trial, swapped for the run's on the way to the
host); `operations` and its `operations.yaml` are the allow-list of what may be asked;
`scope` decides a request against it; `bodies` reads a body as the host would and
re-writes it; `crossrefs` finds text that would act on another repository; `framing`
reads a body within the limits; `authorization` finds a token wherever the host would
read one; `upstream` reaches the host; `doors` listens (each trial its own port, its
connections and their time bounded); `exchange` serves one connection's requests;
`answers` streams the host's answers back; `grant` is a trial's pass. It imports
nothing of the rest of benchkit.
"""
