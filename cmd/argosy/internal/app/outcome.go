package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/hub/api"
)

// goal is what app apply asked for one Application: the generation it
// wrote on each cluster, or the placement that writes it where its
// selector matches.
type goal struct {
	Namespace, Name string
	// spec is the manifest's spec.
	spec json.RawMessage
	// gens is the generation written on each cluster of a direct apply.
	gens map[string]int64
	// placement is the placement generation written, 0 for a direct
	// apply; matches are the clusters its selector matches now.
	placement int64
	selector  string
	matches   []string
}

// clusters are the clusters the goal aims at, by name.
func (g *goal) clusters() []string {
	if g.placement != 0 {
		return g.matches
	}
	out := make([]string, 0, len(g.gens))
	for c := range g.gens {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

func (g *goal) key() string { return g.Namespace + "/" + g.Name }

// goals are what done aimed at, a goal a manifest; a placement's matches
// are read from the hub's clusters now.
func goals(ctx context.Context, o *apicmd.ApplyOptions, done *apicmd.Applied) ([]*goal, error) {
	var sel labels.Selector
	var registered []api.Object
	if o.Placement {
		var err error
		if sel, err = labels.Parse(o.Selector); err != nil {
			return nil, fmt.Errorf("--selector %q: %w", o.Selector, err)
		}
		if registered, err = done.Client.Objects(ctx, "", api.KindClusters); err != nil {
			return nil, o.Write.API.Explain(err)
		}
	}
	out := make([]*goal, len(done.Manifests))
	for i, m := range done.Manifests {
		var spec struct {
			Spec json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(m.JSON, &spec); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Source, err)
		}
		g := &goal{Namespace: m.Namespace, Name: m.Name, spec: spec.Spec, gens: map[string]int64{}}
		for _, w := range done.Results[i].Events {
			switch w.Kind {
			case api.KindPlacements:
				g.placement, g.selector = w.Generation, o.Selector
			case api.KindApplications:
				g.gens[w.Cluster] = w.Generation
			}
		}
		for _, c := range registered {
			if !c.Deleted && sel.Matches(labels.Set(c.Labels)) {
				g.matches = append(g.matches, c.Name)
			}
		}
		out[i] = g
	}
	return out, nil
}

// summarize says in a sentence what the write did for g, or would do.
func summarize(w io.Writer, g *goal, dryRun bool) {
	cs := g.clusters()
	switch {
	case g.placement != 0 && dryRun:
		fmt.Fprintf(w, "Would place %s on %s, and on each cluster that matches later.\n", g.key(), matching(cs, g.selector))
	case g.placement != 0:
		fmt.Fprintf(w, "Placed %s (placement generation %d) on %s, and on each cluster that matches later; "+
			"argosy app placements shows where it is, --wait follows it.\n", g.key(), g.placement, matching(cs, g.selector))
	case dryRun:
		fmt.Fprintf(w, "Would apply %s to %s.\n", g.key(), clusterList(cs))
	default:
		fmt.Fprintf(w, "Applied %s to %s; their agents apply it next: argosy app status %s shows where it stands, --wait follows it.\n",
			g.key(), clusterList(cs), g.Name)
	}
}

// matching says which clusters, cs, a selector matches.
func matching(cs []string, selector string) string {
	if len(cs) == 0 {
		return fmt.Sprintf("no cluster now (%s matches none)", selector)
	}
	return fmt.Sprintf("the %s that %s matches now", clusterList(cs), selector)
}

// clusterList is "2 clusters (a, b)", naming at most five.
func clusterList(cs []string) string {
	noun := "clusters"
	if len(cs) == 1 {
		noun = "cluster"
	}
	shown := cs[:min(len(cs), 5)]
	more := ""
	if n := len(cs) - len(shown); n > 0 {
		more = fmt.Sprintf(", +%d more", n)
	}
	return fmt.Sprintf("%d %s (%s%s)", len(cs), noun, strings.Join(shown, ", "), more)
}
