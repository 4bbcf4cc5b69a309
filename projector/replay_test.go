package projector_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// again appends d once more, as anyone who may append to its topic can:
// the same signed event, decoded at the next offset of its partition,
// appended after the last record by after.
func (l *logOf) again(d *events.Decoded, after time.Duration) *events.Decoded {
	key := fmt.Sprintf("%s/%d", d.Topic, d.Partition)
	c := *d
	c.Offset, c.LogTime = l.next[key], l.recs[len(l.recs)-1].LogTime.Add(after)
	l.next[key]++
	l.recs = append(l.recs, &c)
	return &c
}

// replayLog adds events about c1's objects to a log.
type replayLog struct{ *logOf }

func (l replayLog) res(name string, gen int64) schemas.Resource {
	return schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: name, Generation: gen}
}

// upsert and remove change the Application web.
func (l replayLog) upsert(gen int64, labels map[string]string) *events.Decoded {
	return l.add("config", 0, events.TypeApplicationUpserted, app("web"), &schemas.ApplicationUpserted{Resource: l.res("web", gen),
		Project: "default", Labels: labels, Spec: json.RawMessage(fmt.Sprintf(`{"project":"default","source":{"targetRevision":"v%d"}}`, gen))})
}

func (l replayLog) remove(gen int64) *events.Decoded {
	return l.add("config", 0, events.TypeApplicationDeleted, app("web"), &schemas.ApplicationDeleted{Resource: l.res("web", gen)})
}

func (l replayLog) project(gen int64, deleted bool) *events.Decoded {
	subj := events.Subject{Cluster: "c1", Kind: schemas.SubjectAppProjects, Namespace: "argocd", Name: "team"}
	if deleted {
		return l.add("config", 0, events.TypeAppProjectDeleted, subj, &schemas.AppProjectDeleted{Resource: l.res("team", gen)})
	}
	return l.add("config", 0, events.TypeAppProjectUpserted, subj, &schemas.AppProjectUpserted{Resource: l.res("team", gen),
		Spec: json.RawMessage(fmt.Sprintf(`{"description":"v%d"}`, gen))})
}

func (l replayLog) repo(gen int64, deleted bool) *events.Decoded {
	subj := events.Subject{Cluster: "c1", Kind: schemas.SubjectRepositories, Namespace: "argocd", Name: "git"}
	if deleted {
		return l.add("config", 0, events.TypeRepositoryDeleted, subj, &schemas.RepositoryDeleted{Resource: l.res("git", gen)})
	}
	return l.add("config", 0, events.TypeRepositoryUpserted, subj, &schemas.RepositoryUpserted{Resource: l.res("git", gen),
		URL: "https://git.example.com/r.git", Type: "git"})
}

func (l replayLog) cluster(gen int64, registered bool) *events.Decoded {
	res := schemas.Resource{Cluster: "c1", Name: "c1", Generation: gen}
	if registered {
		return l.add("config", 0, events.TypeClusterRegistered, events.Subject{Cluster: "c1"}, &schemas.ClusterRegistered{Resource: res})
	}
	return l.add("config", 0, events.TypeClusterDeregistered, events.Subject{Cluster: "c1"}, &schemas.ClusterDeregistered{Resource: res})
}

// operation adds a sync of web, requested at the log's next time and
// appended late after it, expiring expires after it (none if 0).
func (l replayLog) operation(id string, late, expires time.Duration) *events.Decoded {
	p := &schemas.OperationRequested{Resource: l.res("web", 1), RequestID: id, Operation: schemas.OperationSync}
	d := l.add("config", 0, events.TypeOperationRequested, app("web"), p)
	if expires > 0 {
		at := d.Event.Time().Add(expires)
		p.ExpiresAt = &at
	}
	d.LogTime = d.LogTime.Add(late)
	return d
}

// TestReplaysChangeNoView folds logs in which signed config events were
// appended again, after their object moved on or within their request's
// life: every view is what the log without them gives, and the audit
// holds each as refused, with the reason and no before or after, beside
// the changes as they were.
func TestReplaysChangeNoView(t *testing.T) {
	placed := map[string]string{schemas.LabelPlacement: "web", schemas.LabelPlacementGeneration: "1"}
	tests := []struct {
		name string
		// log builds the log and returns the records the fold must refuse.
		log    func(l replayLog) []*events.Decoded
		reason string // in every refused entry
	}{
		{"an upsert after its Application was deleted", func(l replayLog) []*events.Decoded {
			up := l.upsert(1, nil)
			l.upsert(2, nil)
			l.remove(3)
			return []*events.Decoded{l.again(up, time.Hour)}
		}, "generation 1 is not newer than the object's generation 3, deleted"},
		{"a deletion after the Application was made again", func(l replayLog) []*events.Decoded {
			l.upsert(1, nil)
			del := l.remove(2)
			l.upsert(3, nil)
			return []*events.Decoded{l.again(del, time.Minute)}
		}, "generation 2 is not newer than the object's generation 3"},
		{"the latest upsert, again", func(l replayLog) []*events.Decoded {
			up := l.upsert(1, nil)
			return []*events.Decoded{l.again(up, time.Second)}
		}, "generation 1 is not newer than the object's generation 1"},
		{"a placement's upsert: no second target", func(l replayLog) []*events.Decoded {
			up := l.upsert(1, placed)
			l.upsert(2, placed)
			return []*events.Decoded{l.again(up, time.Minute), l.again(up, 2*time.Minute)}
		}, "generation 1 is not newer than the object's generation 2"},
		{"a replay between two changes: the next change is one", func(l replayLog) []*events.Decoded {
			up := l.upsert(1, nil)
			l.remove(2)
			r := l.again(up, time.Minute)
			l.upsert(3, nil)
			return []*events.Decoded{r}
		}, "generation 1 is not newer than the object's generation 2, deleted"},
		{"an AppProject upsert after its deletion", func(l replayLog) []*events.Decoded {
			up := l.project(1, false)
			l.project(2, true)
			return []*events.Decoded{l.again(up, time.Hour)}
		}, "generation 1 is not newer than the object's generation 2, deleted"},
		{"a repository deletion after it was added again", func(l replayLog) []*events.Decoded {
			l.repo(1, false)
			del := l.repo(2, true)
			l.repo(3, false)
			return []*events.Decoded{l.again(del, time.Hour)}
		}, "generation 2 is not newer than the object's generation 3"},
		{"a cluster's registration after its deregistration", func(l replayLog) []*events.Decoded {
			reg := l.cluster(1, true)
			l.cluster(2, false)
			return []*events.Decoded{l.again(reg, time.Hour)}
		}, "generation 1 is not newer than the object's generation 2, deleted"},
		{"an operation again within its life", func(l replayLog) []*events.Decoded {
			l.upsert(1, nil)
			op := l.operation("r1", 0, time.Hour)
			return []*events.Decoded{l.again(op, time.Minute)}
		}, "request r1 was taken before, from event config/0-1 at partition 0, offset 1"},
		{"an operation again after its expiresAt", func(l replayLog) []*events.Decoded {
			op := l.operation("r1", 0, 5*time.Minute)
			return []*events.Decoded{l.again(op, 6*time.Minute)}
		}, "expired: appended at 2026-05-04T09:06:00.123456789Z, after its expiry at 2026-05-04T09:05:00Z"},
		{"an operation first seen after its expiresAt (a rebuild from after it)", func(l replayLog) []*events.Decoded {
			return []*events.Decoded{l.operation("r1", 2*time.Hour, 5*time.Minute)}
		}, "expired: appended at 2026-05-04T11:00:00.123456789Z, after its expiry at 2026-05-04T09:05:00Z"},
		{"an operation without expiresAt, past OperationMaxAge", func(l replayLog) []*events.Decoded {
			return []*events.Decoded{l.operation("r1", projector.OperationMaxAge+time.Second, 0)}
		}, "after its expiry at 2026-05-04T09:10:00Z"},
		{"an operation whose expiresAt is further than OperationMaxAge", func(l replayLog) []*events.Decoded {
			return []*events.Decoded{l.operation("r1", 30*time.Minute, time.Hour)}
		}, "after its expiry at 2026-05-04T09:10:00Z"},
		{"nothing: changes with newer generations, operations in time", func(l replayLog) []*events.Decoded {
			l.cluster(1, true)
			l.upsert(0, nil) // a first generation 0 is newer than nothing
			l.upsert(1, placed)
			l.remove(2)
			l.upsert(3, placed)
			l.project(1, false)
			l.project(2, true)
			l.project(3, false)
			l.operation("r1", 0, 0)
			l.operation("r2", projector.OperationMaxAge-time.Second, time.Hour) // just before its expiry
			l.cluster(2, false)
			l.cluster(3, true)
			return nil
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := replayLog{&logOf{}}
			refused := tc.log(l)
			originals := slices.DeleteFunc(slices.Clone(l.recs), func(d *events.Decoded) bool { return slices.Contains(refused, d) })
			want, got := fold(t, originals), fold(t, l.recs)

			// Every view is the log's without the replays.
			views := cmpopts.IgnoreFields(projector.Batch{}, "Audit")
			if diff := cmp.Diff(want, got, views); diff != "" {
				t.Errorf("views (-without the replays +with them):\n%s", diff)
			}
			// The audit: the changes as they were, and the replays refused.
			var changes []projector.AuditEntry
			audited := map[int64]bool{}
			for _, e := range got.Audit {
				i := slices.IndexFunc(refused, func(d *events.Decoded) bool { return d.Offset == e.Offset })
				if i < 0 {
					changes = append(changes, e)
					continue
				}
				d := refused[i]
				if !strings.Contains(e.Refused, tc.reason) || e.Before != nil || e.After != nil || e.EventID != d.Event.ID() ||
					e.Type != d.Spec.Type || !e.At.Equal(d.LogTime) {
					t.Errorf("audit entry of the replay at offset %d: %+v, want refused (%q) with no before or after", d.Offset, e, tc.reason)
				}
				audited[d.Offset] = true
			}
			for _, d := range refused {
				if !audited[d.Offset] {
					t.Errorf("no audit entry for the replay at offset %d", d.Offset)
				}
			}
			chain := cmpopts.IgnoreFields(projector.AuditEntry{}, "PrevHash", "Hash")
			if diff := cmp.Diff(want.Audit, changes, chain); diff != "" {
				t.Errorf("audit entries of the changes (-without the replays +with them):\n%s", diff)
			}
			if broken := projector.Verify(got.Audit); broken != nil {
				t.Errorf("the chain with refused entries breaks: %+v", broken)
			}
		})
	}
}

// TestReplayedDeletionKeepsTheApplicationDeleted is the case that brought
// the rule: generation 1 of an Application captured and appended again
// after the Application was deleted at generation 3 does not bring it back.
func TestReplayedDeletionKeepsTheApplicationDeleted(t *testing.T) {
	l := replayLog{&logOf{}}
	up := l.upsert(1, nil)
	l.upsert(2, nil)
	l.remove(3)
	l.again(up, 24*time.Hour)
	got := fold(t, l.recs).Desired
	if len(got) != 1 || !got[0].Deleted || got[0].Generation != 3 || got[0].Spec != nil {
		t.Errorf("desired %+v, want web deleted at generation 3", got)
	}
}

// TestRefusedEntryTamperDetected: the reason of a refused entry is in its
// hash, so dropping it (the replay passed off as a change) or changing it
// breaks the chain there.
func TestRefusedEntryTamperDetected(t *testing.T) {
	l := replayLog{&logOf{}}
	up := l.upsert(1, nil)
	l.remove(2)
	l.again(up, time.Hour)
	l.upsert(3, nil)
	entries := fold(t, l.recs).Audit
	i := slices.IndexFunc(entries, func(e projector.AuditEntry) bool { return e.Refused != "" })
	if i < 0 {
		t.Fatal("no refused entry")
	}
	for name, tamper := range map[string]func(*projector.AuditEntry){
		"reason dropped": func(e *projector.AuditEntry) { e.Refused = "" },
		"reason changed": func(e *projector.AuditEntry) { e.Refused = "generation 1 is newer" },
		"after added":    func(e *projector.AuditEntry) { e.After = json.RawMessage(`{"project":"default"}`) },
	} {
		t.Run(name, func(t *testing.T) {
			es := slices.Clone(entries)
			tamper(&es[i])
			if broken := projector.Verify(es); broken == nil || broken.Offset != es[i].Offset {
				t.Errorf("Verify = %+v, want broken at offset %d", broken, es[i].Offset)
			}
		})
	}
}

// TestOperationExpiry: the earlier of expiresAt and the signed time plus
// OperationMaxAge.
func TestOperationExpiry(t *testing.T) {
	signed := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := signed.Add(d); return &x }
	for _, tc := range []struct {
		expires *time.Time
		want    time.Time
	}{
		{nil, signed.Add(projector.OperationMaxAge)},
		{at(time.Minute), signed.Add(time.Minute)},
		{at(time.Hour), signed.Add(projector.OperationMaxAge)},
		{at(-time.Minute), signed.Add(-time.Minute)},
	} {
		if got := projector.OperationExpiry(signed, &schemas.OperationRequested{ExpiresAt: tc.expires}); !got.Equal(tc.want) {
			t.Errorf("expiry with expiresAt %v = %s, want %s", tc.expires, got, tc.want)
		}
	}
}

// TestOutsideVerifierChecksRefusedEntries runs the outside verifier
// (events/internal/pyreader/audit_verify.py) over the read API serving a
// fold's chains with refused replays in them: it finds them whole, and
// finds a refused entry whose reason was dropped broken there.
func TestOutsideVerifierChecksRefusedEntries(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run the outside verifier: %v", err)
	}
	l := replayLog{fleetLog()}
	op := l.operation("r9", 0, time.Hour)
	l.again(op, time.Minute)
	l.again(l.recs[1], time.Minute) // web's first upsert, after web was deleted
	entries := fold(t, l.recs).Audit
	run := func(entries []projector.AuditEntry) (string, error) {
		srv := httptest.NewServer(read.New(&readtest.Query{Entries: entries}))
		defer srv.Close()
		out, err := exec.Command(python, "../events/internal/pyreader/audit_verify.py", "--server", srv.URL, "--history", "0").CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run(entries); err != nil || !strings.Contains(out, `"ok": true`) {
		t.Fatalf("the verifier rejects a good chain with refused entries: %v: %s", err, out)
	}
	var n int
	for i, e := range entries {
		if e.Refused == "" {
			continue
		}
		n++
		tampered := slices.Clone(entries)
		tampered[i].Refused = ""
		if out, err := run(tampered); err == nil || !strings.Contains(out, fmt.Sprintf("at offset %d", e.Offset)) {
			t.Errorf("the verifier accepts a refused entry passed off as a change: %v: %s", err, out)
		}
	}
	if n != 2 {
		t.Errorf("%d refused entries, want 2", n)
	}
}
