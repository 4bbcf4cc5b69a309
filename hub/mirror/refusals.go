package mirror

import (
	"sort"
	"sync"
	"time"
)

// ConditionRefused is the type of the condition the mirror writes on a
// mirrored Application whose change the hub refused: a warning, as Argo
// CD's UI shows a type that ends so.
const ConditionRefused = "ChangeRefusedWarning"

// Refusals keeps, for a while, why a change made to a mirrored Application
// (through the admission webhook or the UI proxy) was refused, so that the
// mirror writes it on the object as a condition: the change did not land,
// and the object says why where Argo CD's UI shows it. The webhook and the
// proxy add; the mirror's rounds read. It is safe for concurrent use.
type Refusals struct {
	mu   sync.Mutex
	keep time.Duration
	now  func() time.Time
	m    map[refusalKey]refusedChange
}

type refusalKey struct{ namespace, name string }

type refusedChange struct {
	message string
	at      time.Time
}

// maxRefusals bounds how many objects' refusals are kept: past it, the
// oldest go.
const maxRefusals = 1024

// NewRefusals returns a Refusals that keeps each refusal for keep (the
// last one of each object).
func NewRefusals(keep time.Duration) *Refusals {
	return &Refusals{keep: keep, now: time.Now, m: map[refusalKey]refusedChange{}}
}

// Add records that a change of the mirrored Application namespace/name
// (in the mirror cluster) was refused, with msg saying who asked what and
// why.
func (r *Refusals) Add(namespace, name, msg string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.m[refusalKey{namespace, name}] = refusedChange{message: msg, at: now.UTC().Truncate(time.Second)}
	if len(r.m) <= maxRefusals {
		return
	}
	keys := make([]refusalKey, 0, len(r.m))
	for k := range r.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return r.m[keys[i]].at.Before(r.m[keys[j]].at) })
	for _, k := range keys[:len(keys)-maxRefusals] {
		delete(r.m, k)
	}
}

// condition is the condition to write on namespace/name, if a refusal of
// its change is still kept; expired ones go.
func (r *Refusals) condition(namespace, name string) (map[string]any, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := refusalKey{namespace, name}
	f, ok := r.m[k]
	if !ok {
		return nil, false
	}
	if r.now().Sub(f.at) > r.keep {
		delete(r.m, k)
		return nil, false
	}
	return map[string]any{"type": ConditionRefused, "message": f.message, "lastTransitionTime": f.at.Format(time.RFC3339)}, true
}
