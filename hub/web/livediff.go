package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"

	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/schemas"
)

// liveDiffData is the diff page's: the Application, its cluster, and its
// managed resources as the cluster compared them with what Argo CD last
// applied; or why there are none.
type liveDiffData struct {
	Namespace, Name, Cluster string
	Items                    []liveDiffRow
	Modified, NoTarget       int
	Err                      string
}

// liveDiffRow is one managed resource: Lines, for a modified one, is the
// line diff of its target state and its live state, as YAML.
type liveDiffRow struct {
	Kind, Group, Namespace, Name, SyncStatus string
	Modified, Missing, NoTarget              bool
	Lines                                    template.HTML
}

// liveDiff shows how an Application's managed resources on the cluster
// the query names differ from what its Argo CD last applied, as the
// cluster answers now.
func (h *Handler) liveDiff(r *http.Request) (string, any, error) {
	d := liveDiffData{Namespace: r.PathValue("namespace"), Name: r.PathValue("name"), Cluster: r.URL.Query().Get("cluster")}
	raw, err := ask(r, schemas.QueryDiff, d.Cluster, d.Namespace, d.Name)
	if perr := (*pageError)(nil); errors.As(err, &perr) {
		return "", nil, perr
	}
	if err != nil {
		d.Err = err.Error()
		return "livediff", d, nil
	}
	var answer schemas.ApplicationDiff
	if err := json.Unmarshal(raw, &answer); err != nil {
		d.Err = fmt.Sprintf("the cluster's diff does not decode: %v", err)
		return "livediff", d, nil
	}
	for _, it := range answer.Items {
		row := liveDiffRow{Kind: it.Kind, Group: it.Group, Namespace: it.Namespace, Name: it.Name, SyncStatus: it.SyncStatus,
			Modified: it.Modified, Missing: it.NormalizedLiveState == "null", NoTarget: it.TargetState == ""}
		if row.NoTarget && !row.Missing {
			d.NoTarget++
		}
		if it.Modified {
			d.Modified++
			// The answer is at most schemas.MaxQueryAnswer, and lineDiff
			// bounds its comparison: the page's cost is bounded.
			row.Lines = diffHTML(lineDiff(yamlText(it.TargetState), yamlText(it.NormalizedLiveState)))
		}
		d.Items = append(d.Items, row)
	}
	return "livediff", d, nil
}

// yamlText is a state of a diff answer as YAML: empty for none or null,
// and the state as it came when it is not JSON.
func yamlText(state string) string {
	if state == "" || state == "null" {
		return ""
	}
	y, err := yaml.JSONToYAML([]byte(state))
	if err != nil {
		return state
	}
	return string(y)
}
