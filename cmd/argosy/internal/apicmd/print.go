package apicmd

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// PrintResult writes what a write appended, or would append: as JSON or
// YAML, the hub's answer; as a table, one event a line, and on standard
// error whether it was a dry run or a repeat.
func PrintResult(io cmdkit.IOStreams, format string, res *api.Result) error {
	rows := make([][]string, 0, len(res.Events))
	for _, w := range res.Events {
		offset := "dry run"
		if w.Offset != nil {
			offset = fmt.Sprintf("%d@%d", w.Partition, *w.Offset)
		}
		rows = append(rows, []string{ShortType(w.Type), w.Cluster, w.Kind, cmdkit.OrDash(w.Namespace), w.Name,
			strconv.FormatInt(w.Generation, 10), offset})
	}
	if err := cmdkit.PrintOut(io.Out, format, res, []string{"TYPE", "CLUSTER", "KIND", "NAMESPACE", "NAME", "GENERATION", "OFFSET"}, rows); err != nil {
		return err
	}
	if format != "table" {
		return nil
	}
	switch {
	case res.DryRun:
		fmt.Fprintln(io.Err, "Dry run: the hub wrote nothing.")
	case res.Replayed:
		fmt.Fprintln(io.Err, "Already written by an earlier request with the same idempotency key: nothing was written again.")
	}
	return nil
}

var typeVersion = regexp.MustCompile(`\.v[0-9]+$`)

// ShortType shortens an event type for a table:
// io.argosy.config.cluster.registered.v1 is cluster.registered.
func ShortType(t string) string {
	return typeVersion.ReplaceAllString(strings.TrimPrefix(t, "io.argosy.config."), "")
}

// PrintObjects writes the hub's objects of one kind: as JSON or YAML, as
// the hub lists them; as a table, with the columns that matter for the
// kind.
func PrintObjects(io cmdkit.IOStreams, format, kind string, objs []api.Object) error {
	if objs == nil {
		objs = []api.Object{}
	}
	var header []string
	rows := make([][]string, 0, len(objs))
	for _, o := range objs {
		gen := strconv.FormatInt(o.Generation, 10)
		if o.Deleted {
			gen += " (deleted)"
		}
		switch kind {
		case api.KindClusters:
			header = []string{"NAME", "LABELS", "GENERATION", "PARTITION"}
			part := strconv.Itoa(int(o.Partition))
			if o.Pin != nil {
				part += " (pinned)"
			}
			rows = append(rows, []string{o.Name, cmdkit.Pairs(o.Labels), gen, part})
		case api.KindRepositories:
			header = []string{"CLUSTER", "NAMESPACE", "NAME", "URL", "PROJECT", "GENERATION"}
			rows = append(rows, []string{o.Cluster, o.Namespace, o.Name, cmdkit.OrDash(o.URL), cmdkit.OrDash(o.Project), gen})
		case api.KindApplications:
			header = []string{"CLUSTER", "NAMESPACE", "NAME", "PROJECT", "GENERATION"}
			rows = append(rows, []string{o.Cluster, o.Namespace, o.Name, cmdkit.OrDash(o.Project), gen})
		default:
			header = []string{"CLUSTER", "NAMESPACE", "NAME", "GENERATION"}
			rows = append(rows, []string{o.Cluster, o.Namespace, o.Name, gen})
		}
	}
	if len(rows) == 0 && format == "table" {
		fmt.Fprintf(io.Err, "No %s.\n", kindName(kind, 2))
		return nil
	}
	return cmdkit.PrintOut(io.Out, format, api.ObjectList{Items: objs}, header, rows)
}

// List returns the hub's objects of kind, of cluster if it is not empty,
// and only those not deleted unless deleted is set.
func List(ctx context.Context, c *api.Client, cluster, kind string, deleted bool) ([]api.Object, error) {
	objs, err := c.Objects(ctx, cluster, kind)
	if err != nil {
		return nil, err
	}
	out := objs[:0]
	for _, o := range objs {
		if deleted || !o.Deleted {
			out = append(out, o)
		}
	}
	return out, nil
}

// Find returns the hub's latest word on one object (a cluster: kind
// clusters, cluster and name its name, namespace empty), nil when it has
// none or the object is deleted.
func Find(ctx context.Context, c *api.Client, kind, cluster, namespace, name string) (*api.Object, error) {
	objs, err := c.Objects(ctx, cluster, kind)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.Name == name && o.Namespace == namespace && !o.Deleted {
			return &o, nil
		}
	}
	return nil, nil
}

// kindName names a kind for a person: n is 1 or 2 (plural).
func kindName(kind string, n int) string {
	names := map[string][2]string{
		api.KindClusters:     {"cluster", "clusters"},
		api.KindApplications: {"Application", "Applications"},
		api.KindAppProjects:  {"AppProject", "AppProjects"},
		api.KindRepositories: {"repository", "repositories"},
	}[kind]
	if names[0] == "" {
		return kind
	}
	return names[min(n, 2)-1]
}
