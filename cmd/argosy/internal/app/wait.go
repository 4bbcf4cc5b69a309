package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/schemas"
)

// Where a cluster stands on an applied Application.
const (
	// statePending: the cluster's agent has not applied the generation
	// yet (or, for a placement, the hub has not written it there yet).
	statePending = "pending"
	// stateProgressing: applied; Argo CD is not Synced and Healthy yet.
	stateProgressing = "progressing"
	// stateConverged: applied, Synced and Healthy.
	stateConverged = "converged"
	// stateFailed: rejected by the agent, or Argo CD's operation failed.
	stateFailed = "failed"
)

// operationSkew is how much earlier than the apply, by the command's
// clock, an operation may have started and still count as the apply's:
// the clusters' clocks may differ from it.
const operationSkew = 30 * time.Second

// outcome is where one cluster stands.
type outcome struct {
	cluster, state, detail string
	stale                  bool
}

// outcomeOf says where a cluster stands on generation gen of an
// Application, from its row of the read API (nil if it has none); since
// is when the apply was sent.
func outcomeOf(cluster string, a *read.App, gen int64, since time.Time) outcome {
	out := outcome{cluster: cluster, state: statePending, detail: "not reported by its agent yet"}
	if a == nil || a.Observed == nil {
		return out
	}
	out.stale = a.Stale
	o := a.Observed
	switch op := o.Operation; {
	case o.Rejected != nil && o.Rejected.Generation >= gen:
		out.state, out.detail = stateFailed, fmt.Sprintf("rejected generation %d (%s): %s", o.Rejected.Generation, o.Rejected.Code, o.Rejected.Reason)
	case o.AppliedGeneration < gen:
		out.detail = fmt.Sprintf("its agent has applied generation %d, not yet %d", o.AppliedGeneration, gen)
	case op != nil && (op.Phase == schemas.OperationPhaseFailed || op.Phase == schemas.OperationPhaseError) &&
		!op.StartedAt.Before(since.Add(-operationSkew)):
		out.state, out.detail = stateFailed, fmt.Sprintf("Argo CD's sync ended %s: %s", op.Phase, cmdkit.OrDash(op.Message))
	case o.Sync != nil && o.Sync.Status == "Synced" && o.Health != nil && o.Health.Status == "Healthy":
		out.state, out.detail = stateConverged, "Synced and Healthy"
	default:
		out.state, out.detail = stateProgressing, "applied; "+syncHealth(o)
	}
	return out
}

func syncHealth(o *projector.AppObserved) string {
	sync, health := "sync unknown", "health unknown"
	if o.Sync != nil && o.Sync.Status != "" {
		sync = o.Sync.Status
	}
	if o.Health != nil && o.Health.Status != "" {
		health = o.Health.Status
	}
	return sync + ", " + health
}

// waiter follows applied goals until every cluster converged or failed.
type waiter struct {
	c       *api.Client
	api     *apicmd.Options
	errw    io.Writer
	since   time.Time
	timeout time.Duration
	every   time.Duration
}

// wait polls the hub and its read API every w.every, saying on errw
// where each goal stands whenever that changes, until every cluster of
// every goal converged or failed, or w.timeout passed. It fails naming
// the failed clusters; past the timeout, with cmdkit.ExitTimeout.
func (w *waiter) wait(ctx context.Context, gs []*goal) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	fmt.Fprintf(w.errw, "Waiting up to %s for %s to converge (applied, Synced and Healthy).\n", w.timeout, goalNames(gs))
	said := map[string]string{}
	var last []outcome // the last round that read every goal
	for {
		var all []outcome
		done := true
		for _, g := range gs {
			outs, err := w.poll(ctx, g)
			if err != nil {
				return err
			}
			if ctx.Err() != nil { // the round was cut short: say where the last one stood
				return w.gaveUp(gs, last)
			}
			if line := progress(g, outs); line != said[g.key()] {
				fmt.Fprintln(w.errw, line)
				said[g.key()] = line
			}
			for _, o := range outs {
				done = done && (o.state == stateConverged || o.state == stateFailed)
			}
			all = append(all, outs...)
		}
		if done {
			return failures(all)
		}
		last = all
		select {
		case <-ctx.Done():
			return w.gaveUp(gs, all)
		case <-time.After(w.every):
		}
	}
}

// poll is where each cluster of g stands now.
func (w *waiter) poll(ctx context.Context, g *goal) ([]outcome, error) {
	gens, pending, err := w.generations(ctx, g)
	if err != nil {
		return nil, err
	}
	rows, err := w.c.Apps(ctx, projector.AppFilter{Namespace: g.Namespace, Name: g.Name})
	switch {
	case ctx.Err() != nil:
		return nil, nil
	case noReadAPI(err):
		return nil, fmt.Errorf("--wait follows the clusters' reports in the read API, and the hub serves none (%w)", err)
	case err != nil:
		return nil, fmt.Errorf("following %s: %w", g.key(), w.api.Explain(err))
	}
	byCluster := map[string]*read.App{}
	for i := range rows {
		byCluster[rows[i].Cluster] = &rows[i]
	}
	outs := pending
	for c, gen := range gens {
		outs = append(outs, outcomeOf(c, byCluster[c], gen, w.since))
	}
	sortOutcomes(outs)
	return outs, nil
}

// generations are, for each cluster of g, the generation it must apply;
// for a placement, those of the clusters the hub has written it on, the
// others pending or failed (a conflict with an Application it does not
// own).
func (w *waiter) generations(ctx context.Context, g *goal) (map[string]int64, []outcome, error) {
	if g.placement == 0 {
		return g.gens, nil, nil
	}
	ps, err := w.c.Placements(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("following placement %s: %w", g.key(), w.api.Explain(err))
	}
	gens := map[string]int64{}
	var rest []outcome
	for _, p := range ps {
		if p.Namespace != g.Namespace || p.Name != g.Name {
			continue
		}
		if p.Generation != g.placement {
			return nil, nil, fmt.Errorf("placement %s is at generation %d now, not %d: another change replaced this one", g.key(), p.Generation, g.placement)
		}
		for _, pc := range p.Clusters {
			switch {
			case !pc.Matches:
			case strings.HasPrefix(pc.State, "conflict"):
				rest = append(rest, outcome{cluster: pc.Cluster, state: stateFailed, detail: pc.State})
			case pc.PlacementGeneration == g.placement:
				gens[pc.Cluster] = pc.Generation
			default:
				rest = append(rest, outcome{cluster: pc.Cluster, state: statePending, detail: "the hub has not written it there yet"})
			}
		}
	}
	return gens, rest, nil
}

// progress is a line saying where g stands: counts by state, and the
// first cluster not converged with why.
func progress(g *goal, outs []outcome) string {
	counts := map[string]int{}
	stale := 0
	var first *outcome
	for i, o := range outs {
		counts[o.state]++
		if o.stale {
			stale++
		}
		if first == nil && o.state != stateConverged {
			first = &outs[i]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d clusters converged", g.key(), counts[stateConverged], len(outs))
	for _, s := range []string{stateProgressing, statePending, stateFailed} {
		if counts[s] > 0 {
			fmt.Fprintf(&b, ", %d %s", counts[s], s)
		}
	}
	if stale > 0 {
		fmt.Fprintf(&b, " (%d Stale: no recent heartbeat, so their reports may be old)", stale)
	}
	if first != nil {
		fmt.Fprintf(&b, "; %s: %s", first.cluster, first.detail)
	}
	return b.String()
}

// failures is an error naming the clusters that failed, nil if none did.
func failures(outs []outcome) error {
	var lines []string
	for _, o := range outs {
		if o.state == stateFailed {
			lines = append(lines, fmt.Sprintf("  %s: %s", o.cluster, o.detail))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d clusters failed:\n%s", len(lines), len(outs), strings.Join(lines, "\n"))
}

// gaveUp is the error of a wait past its timeout: the clusters that had
// not converged, at most ten of them, and those that failed.
func (w *waiter) gaveUp(gs []*goal, outs []outcome) error {
	var lines []string
	left := 0
	for _, o := range outs {
		if o.state == stateConverged {
			continue
		}
		if left++; len(lines) < 10 {
			lines = append(lines, fmt.Sprintf("  %s: %s: %s", o.cluster, o.state, o.detail))
		}
	}
	if left > len(lines) {
		lines = append(lines, fmt.Sprintf("  and %d more", left-len(lines)))
	}
	err := fmt.Errorf("gave up waiting after %s for %s: %d of %d clusters had not converged:\n%s\n  argosy app status %s shows where they stand",
		w.timeout, goalNames(gs), left, len(outs), strings.Join(lines, "\n"), gs[0].Name)
	return &cmdkit.ExitError{Code: cmdkit.ExitTimeout, Err: err}
}

func goalNames(gs []*goal) string {
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.key()
	}
	return strings.Join(names, ", ")
}

// sortOutcomes orders outcomes by cluster.
func sortOutcomes(outs []outcome) {
	slices.SortFunc(outs, func(a, b outcome) int { return strings.Compare(a.cluster, b.cluster) })
}

// noReadAPI reports whether err says the hub serves no read API: its
// GET routes are then unknown, or known only as write routes.
func noReadAPI(err error) bool {
	s := api.StatusOf(err)
	return s == http.StatusNotFound || s == http.StatusMethodNotAllowed
}
