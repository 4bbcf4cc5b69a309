package spoke

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/schemas"
)

// HistoryEntry is one entry of an Application's status.history: a sync that
// succeeded.
type HistoryEntry = argocd.HistoryEntry

// SyncResult is the outcome of an Application's last sync operation, when
// that operation was a sync or a rollback.
type SyncResult = argocd.SyncResult

// DeployMark is what the spoke keeps, durably, about the deployments it
// recorded for one Application: enough to publish each one once and to
// notice when it cannot have seen them all.
type DeployMark struct {
	// UID is the Application object's uid: history ids start again when an
	// Application is deleted and created anew.
	UID string `json:"uid"`
	// LastHistoryID is the last status.history id recorded, -1 for none.
	LastHistoryID int64 `json:"lastHistoryId"`
	// LastRevision is the revision of that entry, and LastSource the
	// digest of its source.
	LastRevision string `json:"lastRevision,omitempty"`
	LastSource   string `json:"lastSource,omitempty"`
	// LastFailure is the start of the last failed sync recorded.
	LastFailure time.Time `json:"lastFailure,omitzero"`
}

// Deployments returns the deployment records and gaps to publish for one
// observed Application status, given the mark of what was already recorded
// (seen is false for an Application never recorded before), and the mark to
// keep after they are published. It is a pure function: publishing the
// result again after a crash yields the same deployment ids, which readers
// de-duplicate.
//
// Succeeded syncs come from status.history, one record per id after the
// mark. A failed sync has no history entry; it comes from the last
// operation's result. If the history no longer holds the ids right after
// the mark (Argo CD keeps revisionHistoryLimit entries, 10 by default), the
// records in between are unknowable and a gap names them.
func Deployments(cluster string, s AppStatus, mark DeployMark, seen bool) ([]schemas.DeploymentRecorded, []schemas.DeploymentGap, DeployMark) {
	res := schemas.Resource{Cluster: cluster, Namespace: s.Namespace, Name: s.Name, Generation: s.Generation}
	var gaps []schemas.DeploymentGap
	if seen && mark.UID != "" && mark.UID != s.UID {
		// The Application was deleted and created again while nobody looked.
		gaps = append(gaps, DeletedGap(cluster, s.Namespace, s.Name, mark))
		seen = false
	}
	if !seen {
		mark = DeployMark{LastHistoryID: -1}
	}
	mark.UID = s.UID
	hist := slices.Clone(s.History)
	slices.SortFunc(hist, func(a, b HistoryEntry) int { return int(a.ID - b.ID) })
	if len(hist) > 0 && hist[0].ID > mark.LastHistoryID+1 {
		reason := schemas.GapHistoryTrimmed
		if !seen {
			reason = schemas.GapNotObserved
		}
		gaps = append(gaps, schemas.DeploymentGap{Resource: res, AppUID: s.UID, Reason: reason,
			FromHistoryID: mark.LastHistoryID + 1, ToHistoryID: ptr(hist[0].ID - 1), LastRecorded: lastRecorded(mark),
			Detail: fmt.Sprintf("history ids %d to %d were no longer in Argo CD's history when the agent looked", mark.LastHistoryID+1, hist[0].ID-1)})
	}
	var recs []schemas.DeploymentRecorded
	prev := HistoryEntry{Revision: mark.LastRevision, Source: mark.LastSource}
	for i, h := range hist {
		if i > 0 && hist[i-1].ID == h.ID-1 {
			prev = hist[i-1]
		} else if h.ID != mark.LastHistoryID+1 {
			prev = HistoryEntry{}
		}
		if h.ID <= mark.LastHistoryID {
			continue
		}
		recs = append(recs, schemas.DeploymentRecorded{Resource: res, DeploymentID: s.UID + "/" + strconv.FormatInt(h.ID, 10),
			Revision: orUnknown(h.Revision), PreviousRevision: prev.Revision, Phase: "Succeeded", Initiator: h.Initiator,
			StartedAt: h.StartedAt, FinishedAt: h.FinishedAt, Project: s.Project, Labels: s.Labels, AppUID: s.UID, HistoryID: ptr(h.ID),
			RevisionCommittedAt: committedAt(s, h.Revision), Unchanged: unchanged(h.Revision, h.Source, prev)})
		mark.LastHistoryID, mark.LastRevision, mark.LastSource = h.ID, h.Revision, h.Source
	}
	if f := s.LastSync; f != nil && failed(f.Phase) && !f.FinishedAt.IsZero() && f.StartedAt.After(mark.LastFailure) {
		last := HistoryEntry{Revision: mark.LastRevision, Source: mark.LastSource}
		recs = append(recs, schemas.DeploymentRecorded{Resource: res,
			DeploymentID: s.UID + "/failed/" + f.StartedAt.UTC().Format(time.RFC3339Nano),
			Revision:     orUnknown(f.Revision), PreviousRevision: mark.LastRevision, Phase: f.Phase, Initiator: f.Initiator,
			StartedAt: f.StartedAt, FinishedAt: f.FinishedAt, Project: s.Project, Labels: s.Labels, AppUID: s.UID,
			RevisionCommittedAt: committedAt(s, f.Revision), Unchanged: unchanged(f.Revision, f.Source, last)})
		mark.LastFailure = f.StartedAt
	}
	slices.SortStableFunc(recs, func(a, b schemas.DeploymentRecorded) int { return a.FinishedAt.Compare(b.FinishedAt) })
	return recs, gaps, mark
}

// DeletedGap is the gap of an Application that was deleted while the spoke
// was not watching: whatever it deployed after the mark is unknown.
func DeletedGap(cluster, namespace, name string, mark DeployMark) schemas.DeploymentGap {
	return schemas.DeploymentGap{Resource: schemas.Resource{Cluster: cluster, Namespace: namespace, Name: name},
		AppUID: mark.UID, Reason: schemas.GapDeletedUnobserved, FromHistoryID: mark.LastHistoryID + 1,
		LastRecorded: lastRecorded(mark), Detail: "the Application was deleted while the agent was not watching"}
}

func lastRecorded(m DeployMark) *int64 {
	if m.LastHistoryID < 0 {
		return nil
	}
	return ptr(m.LastHistoryID)
}

// committedAt is when rev was committed, if the hub's change that the
// Application carries named that commit; nil otherwise, never a guess.
func committedAt(s AppStatus, rev string) *time.Time {
	if rev == "" || s.CommitRevision != rev || s.CommitTime.IsZero() {
		return nil
	}
	return ptr(s.CommitTime)
}

// unchanged reports whether a sync of revision rev from source deployed
// what prev, the Application's deployment before it, had deployed: a
// re-sync that changed nothing, or a self-heal that put drifted resources
// back. Without prev's source it cannot say, and says no.
func unchanged(rev, source string, prev HistoryEntry) bool {
	return rev != "" && source != "" && rev == prev.Revision && source == prev.Source
}

func failed(phase string) bool { return phase == "Failed" || phase == "Error" }

// orUnknown fills the schema's required revision when Argo CD recorded none
// (a sync that failed before resolving its revision).
func orUnknown(rev string) string {
	if rev == "" {
		return "unknown"
	}
	return rev
}

func ptr[T any](v T) *T { return &v }
