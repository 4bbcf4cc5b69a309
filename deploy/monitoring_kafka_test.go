//go:build integration

package deploy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// TestMonitoringQueriesUseExportedMetrics renders the chart's
// PrometheusRule and Grafana dashboards, parses every PromQL expression in
// them, and checks that each metric they read is one the real components
// export: argosy-dev (the embedded broker, the hub, the projector and
// real spoke agents over a simulated Argo CD, one process with the
// binaries' telemetry) is started, an Application is applied and
// acknowledged, a malformed record is dead-lettered, and the names come
// from its /metrics. Histograms are read as their _bucket, _sum and _count
// series and counters as _total, so a query must name a series that is
// really there. A rule with a misspelt metric fails the same check.
func TestMonitoringQueriesUseExportedMetrics(t *testing.T) {
	queries := monitoringQueries(t, render(t, "argosy", "-f", filepath.Join(chart, "ci", "monitoring-values.yaml"),
		"--set", "prometheusRule.alerts.hubWriteErrors.enabled=true"))
	if len(queries) < 10 {
		t.Fatalf("only %d queries rendered: %v", len(queries), queries)
	}
	exported := scrapeDev(t)
	if errs := checkQueries(queries, exported); len(errs) > 0 {
		t.Errorf("queries read metrics the components do not export:\n%s", strings.Join(errs, "\n"))
	}

	// The check catches a misspelt metric and a function PromQL lacks.
	misspelt := map[string]string{"misspelt": `max by (cluster) (argosy_cluster_oldest_unaplied_change_seconds) > 900`,
		"base of a histogram": `rate(argosy_projector_step_duration_seconds[5m])`,
		"not PromQL":          `rollup_rate(argosy_projector_lag[5m])`}
	for what, q := range misspelt {
		if errs := checkQueries(map[string]string{what: q}, exported); len(errs) != 1 {
			t.Errorf("%s: check of %q = %v, want one error", what, q, errs)
		}
	}
}

// monitoringQueries returns every PromQL expression of the rendered
// PrometheusRules and dashboard ConfigMaps, by where it is.
func monitoringQueries(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		switch o.GetKind() {
		case "PrometheusRule":
			groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
			for _, g := range groups {
				gm, _ := g.(map[string]any)
				rules, _ := gm["rules"].([]any)
				for _, r := range rules {
					rm, _ := r.(map[string]any)
					alert, _ := rm["alert"].(string)
					expr, _ := rm["expr"].(string)
					out["rule "+alert] = expr
				}
			}
		case "ConfigMap":
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for file, text := range data {
				if !strings.HasSuffix(file, ".json") {
					continue
				}
				var d dashboard
				if err := json.Unmarshal([]byte(text), &d); err != nil {
					t.Fatalf("dashboard %s: %v", file, err)
				}
				d.queries(file, out)
			}
		}
	}
	return out
}

type dashboard struct {
	Panels []panel `json:"panels"`
}

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a row's
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func (d dashboard) queries(file string, out map[string]string) {
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				out[fmt.Sprintf("%s %q target %d", file, p.Title, i)] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
}

// promqlFuncs are the PromQL functions and aggregations the queries may
// use: the parser reads MetricsQL, a superset, so what is not PromQL is
// refused here.
var promqlFuncs = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`abs absent absent_over_time avg avg_over_time bottomk ceil changes clamp clamp_max clamp_min
		count count_over_time count_values day_of_month day_of_week days_in_month delta deriv exp floor group
		histogram_quantile holt_winters hour idelta increase irate label_join label_replace last_over_time ln log10 log2
		max max_over_time min min_over_time minute month predict_linear quantile quantile_over_time rate resets round
		scalar sgn sort sort_desc sqrt stddev stddev_over_time stdvar sum sum_over_time time timestamp topk vector year`) {
		promqlFuncs[f] = true
	}
}

// checkQueries parses each query and returns an error for each that does
// not parse, calls a function PromQL lacks, or reads a metric not in
// exported.
func checkQueries(queries map[string]string, exported map[string]bool) []string {
	var errs []string
	for where, q := range queries {
		e, err := metricsql.Parse(q)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %q does not parse: %v", where, q, err))
			continue
		}
		var bad []string
		metricsql.VisitAll(e, func(x metricsql.Expr) {
			switch x := x.(type) {
			case *metricsql.FuncExpr:
				if !promqlFuncs[x.Name] {
					bad = append(bad, "function "+x.Name+" is not PromQL")
				}
			case *metricsql.AggrFuncExpr:
				if !promqlFuncs[x.Name] {
					bad = append(bad, "aggregation "+x.Name+" is not PromQL")
				}
			case *metricsql.MetricExpr:
				for _, lfs := range x.LabelFilterss {
					if len(lfs) == 0 || lfs[0].Label != "__name__" || lfs[0].IsRegexp || lfs[0].IsNegative {
						bad = append(bad, "a selector without a plain metric name")
						continue
					}
					if !exported[lfs[0].Value] {
						bad = append(bad, "metric "+lfs[0].Value+" is not exported")
					}
				}
			}
		})
		if len(bad) > 0 {
			errs = append(errs, fmt.Sprintf("%s: %q: %s", where, q, strings.Join(bad, "; ")))
		}
	}
	sort.Strings(errs)
	return errs
}

// scrapeDev runs argosy-dev with two simulated clusters, applies an
// Application to one, dead-letters a malformed status record, and returns
// the series names of its /metrics once the acknowledgement, the
// dead letter and the per-cluster gauges show there.
func scrapeDev(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "argosy-dev")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/argosyproj/argosy/cmd/argosy-dev").CombinedOutput(); err != nil {
		t.Fatalf("build argosy-dev: %v\n%s", err, out)
	}
	ports, err := testproc.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	broker := fmt.Sprintf("127.0.0.1:%d", ports[2])
	p, err := testproc.Start(dir, "dev", bin, []string{"--data-dir", data, "--clusters", "2", "--quiet",
		"--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--broker-port", fmt.Sprint(ports[2]), "--offline-every", "0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Errorf("stop argosy-dev: %v", err)
		}
	})
	var ready struct {
		URL      string   `json:"url"`
		Token    string   `json:"token"`
		Clusters []string `json:"clusters"`
	}
	waitUntil(t, 3*time.Minute, "argosy-dev is ready", p, func() bool {
		b, err := os.ReadFile(filepath.Join(data, "dev.json"))
		return err == nil && json.Unmarshal(b, &ready) == nil && len(ready.Clusters) == 2
	})
	hub, err := api.NewClient(ready.URL, ready.Token, nil)
	if err != nil {
		t.Fatal(err)
	}
	manifest := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"guestbook","namespace":"argocd"},
		"spec":{"project":"default","source":{"repoURL":"https://git.example/guestbook","path":"app","targetRevision":"main"},
		"destination":{"server":"https://kubernetes.default.svc","namespace":"guestbook"}}}`
	if _, err := hub.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: ready.Clusters[:1], Manifest: json.RawMessage(manifest)},
		api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "argosy.status", Key: []byte(ready.Clusters[1]), Value: []byte("not an event")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])
	var names map[string]bool
	waitUntil(t, 2*time.Minute, "the dev system's metrics show its work", p, func() bool {
		names = scrape(t, metrics)
		return names["argosy_spoke_acknowledged_total"] && names["argosy_events_dead_lettered_total"] &&
			names["argosy_cluster_oldest_unapplied_change_seconds"] && names["argosy_cluster_heartbeat_age_seconds"] &&
			names["argosy_hub_requests_total"] && names["argosy_projector_step_duration_seconds_bucket"]
	})
	return names
}

// scrape returns the series names of the Prometheus text at url.
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a loopback scrape
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

func waitUntil(t *testing.T, within time.Duration, what string, p *testproc.Proc, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if exited, _ := p.Exited(); exited || time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, within, p.LogTail())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestAlertRulesAreWellFormed checks what promtool check rules would of
// the rendered PrometheusRule, with every alert enabled: each rule has a
// name, a `for` Prometheus reads as a duration, a severity, and summary,
// description and runbook_url annotations whose templates parse with
// Prometheus's template functions; names are unique. The apiserver
// dry-run (TestChartOnAPIServer) checks the shape against the CRD.
func TestAlertRulesAreWellFormed(t *testing.T) {
	objs := render(t, "argosy", "-f", filepath.Join(chart, "ci", "monitoring-values.yaml"),
		"--set", "prometheusRule.alerts.hubWriteErrors.enabled=true")
	funcs := template.FuncMap{}
	for _, f := range []string{"humanize", "humanize1024", "humanizeDuration", "humanizePercentage", "humanizeTimestamp", "title", "toUpper", "toLower"} {
		funcs[f] = func(v any) string { return fmt.Sprint(v) }
	}
	seen := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
		for _, g := range groups {
			rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rules {
				rm := r.(map[string]any)
				alert, _ := rm["alert"].(string)
				if alert == "" || seen[alert] {
					t.Errorf("rule %v: no name, or a name used twice", rm)
				}
				seen[alert] = true
				if f, _ := rm["for"].(string); f != "" {
					if _, err := model.ParseDuration(f); err != nil {
						t.Errorf("%s: for %q: %v", alert, f, err)
					}
				}
				if sev, _, _ := unstructured.NestedString(rm, "labels", "severity"); sev == "" {
					t.Errorf("%s: no severity label", alert)
				}
				for _, a := range []string{"summary", "description", "runbook_url"} {
					text, _, _ := unstructured.NestedString(rm, "annotations", a)
					if text == "" {
						t.Errorf("%s: no %s annotation", alert, a)
						continue
					}
					// Prometheus defines $labels and $value before the text.
					if _, err := template.New(a).Funcs(funcs).Parse(`{{$labels := .Labels}}{{$value := .Value}}` + text); err != nil {
						t.Errorf("%s: %s: %v", alert, a, err)
					}
				}
				if u, _, _ := unstructured.NestedString(rm, "annotations", "runbook_url"); !strings.HasSuffix(u, "#"+strings.ToLower(alert)) {
					t.Errorf("%s: runbook_url %q does not point at its runbook", alert, u)
				}
			}
		}
	}
	if len(seen) != 5 {
		t.Errorf("alerts %v, want 5", seen)
	}
}
