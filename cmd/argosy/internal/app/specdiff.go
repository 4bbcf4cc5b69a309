package app

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

// printDiffs writes, for each goal of a dry run, how its manifest's spec
// differs from the spec the fleet view holds on each cluster it aims at,
// as YAML in the unified format; clusters that hold the same spec share
// one diff. What it cannot compare it says on errw.
func printDiffs(ctx context.Context, w, errw io.Writer, c *api.Client, o *apicmd.Options, gs []*goal) {
	for _, g := range gs {
		rows, err := c.Apps(ctx, projector.AppFilter{Namespace: g.Namespace, Name: g.Name})
		switch {
		case noReadAPI(err):
			fmt.Fprintf(errw, "Note: no diff of %s: the hub serves no read API, which holds the specs the clusters have\n", g.key())
			continue
		case err != nil:
			fmt.Fprintf(errw, "Note: no diff of %s: the read API answered: %v\n", g.key(), o.Explain(err))
			continue
		}
		writeDiffs(w, errw, g, rows)
	}
}

// specGroup is the clusters that hold one spec.
type specGroup struct {
	held     string
	clusters []string
	gens     []string
}

// writeDiffs writes g's diffs against rows, the fleet view's rows of its
// Application.
func writeDiffs(w, errw io.Writer, g *goal, rows []read.App) {
	want, err := yaml.JSONToYAML(g.spec)
	if err != nil {
		fmt.Fprintf(errw, "Note: no diff of %s: its spec: %v\n", g.key(), err)
		return
	}
	byCluster := map[string]read.App{}
	for _, r := range rows {
		byCluster[r.Cluster] = r
	}
	var groups []*specGroup
	var fresh, same []string
	for _, c := range g.clusters() {
		d := byCluster[c].Desired
		if d == nil || d.Deleted {
			fresh = append(fresh, c)
			continue
		}
		if why := apicmd.Omitted(d.Spec); why != "" {
			fmt.Fprintf(errw, "Note: no diff of %s on %s: the spec the fleet view holds is %s\n", g.key(), c, why)
			continue
		}
		if gen, ok := g.gens[c]; ok && gen != d.Generation+1 {
			fmt.Fprintf(errw, "Note: the fleet view holds generation %d of %s on %s, the hub %d: the diff is against the view's, which is catching up\n",
				d.Generation, g.key(), c, gen-1)
		}
		held, err := yaml.JSONToYAML(d.Spec)
		if err != nil {
			fmt.Fprintf(errw, "Note: no diff of %s on %s: %v\n", g.key(), c, err)
			continue
		}
		if string(held) == string(want) {
			same = append(same, c)
			continue
		}
		i := slices.IndexFunc(groups, func(sg *specGroup) bool { return sg.held == string(held) })
		if i < 0 {
			groups, i = append(groups, &specGroup{held: string(held)}), len(groups)
		}
		groups[i].clusters = append(groups[i].clusters, c)
		groups[i].gens = append(groups[i].gens, fmt.Sprint(d.Generation))
	}
	for _, sg := range groups {
		fmt.Fprintf(w, "\n%s on %s, at generation %s:\n--- the spec they hold\n+++ the manifest's\n%s",
			g.key(), clusterList(sg.clusters), strings.Join(slices.Compact(sg.gens), ", "), unified(sg.held, string(want)))
	}
	if len(fresh) > 0 {
		fmt.Fprintf(w, "\n%s on %s: new.\n", g.key(), clusterList(fresh))
	}
	if len(same) > 0 {
		fmt.Fprintf(w, "\n%s on %s: the spec is unchanged.\n", g.key(), clusterList(same))
	}
}
