package main

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// report is the results file and its plots.
type report struct {
	cfg     *config
	started time.Time
	runs    []*run
	wire    []wireResult
	sample  *wireSample
	skipped []string // why a fleet size was not run
}

// date names the results file and its plots: the day, and the label.
func (r *report) date() string {
	if r.cfg.label != "" {
		return r.started.UTC().Format("2006-01-02") + "-" + r.cfg.label
	}
	return r.started.UTC().Format("2006-01-02")
}

func (r *report) path() string { return filepath.Join(r.cfg.out, r.date()+".md") }

// pct returns the p-th percentile of sorted durations, rounded for a table.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i].Round(100 * time.Microsecond)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// hubProjPeak is the hub's and the projector's peak RSS together, the
// projector's over the change phase or its ingestion, whichever is more.
func (x *run) hubProjPeak() int64 {
	return x.fan.after["hub"].peak + max(x.fan.after["projector"].peak, x.ingestUsage.peak)
}

// cores is the CPU a role used over the fan-out phase, in cores.
func (f *fanout) cores(role string) float64 {
	return float64(f.after[role].cpu-f.before[role].cpu) / float64(f.elapsed)
}

func (r *report) write() error {
	if err := os.MkdirAll(r.cfg.out, 0o755); err != nil {
		return err
	}
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	r.writeHeader(w)
	r.writeGoals(w)
	w("## Runs\n\n")
	for _, why := range r.skipped {
		w("%s.\n\n", why)
	}
	if len(r.runs) == 0 {
		return os.WriteFile(r.path(), b.Bytes(), 0o644)
	}
	r.writeTable(w)
	w("\nLatencies run from the moment the hub's answer reached the caller: to the broker's append time of the spoke's `config.applied` acknowledgement "+
		"(the status topic stamps LogAppendTime), and, for every %d-th change, to the first poll of the projector's read API that shows "+
		"the generation applied (polled every 10 ms, or every twentieth of the time since the answer when longer: within 10 ms or 5 %%). \"Settled\" is ten seconds after the rollout; peaks are the processes' VmHWM.\n\n", r.cfg.viewEvery)
	if err := r.plots(); err != nil {
		return err
	}
	w("![fan-out latency CDF](%s-latency.png)\n\n![throughput and memory against fleet size](%s-scale.png)\n\n", r.date(), r.date())
	r.writeWire(w)
	r.writeProfiles(w)
	return os.WriteFile(r.path(), b.Bytes(), 0o644)
}

// writeHeader writes the title and how the benchmark ran.
func (r *report) writeHeader(w func(string, ...any)) {
	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	w("# Fleet benchmark, %s\n\n", r.date())
	margin := "the default clock margin (2 s)"
	args := ""
	if r.cfg.margin > 0 {
		margin, args = fmt.Sprintf("a clock margin of %s", r.cfg.margin), fmt.Sprintf(" -clock-margin %s -label %s", r.cfg.margin, r.cfg.label)
	}
	w("`make bench-fleet` (`go run ./bench/fleet -sizes %s -rate %v -duration %s -apps %d -partitions %d -per-process %d -heartbeat %s%s`), at commit %s, on %s, with %s.\n\n",
		joinInts(r.cfg.sizes), r.cfg.rate, r.cfg.duration, r.cfg.apps, r.cfg.partitions, r.cfg.perProcess, r.cfg.heartbeat, args, strings.TrimSpace(string(commit)), machine(), margin)
	kafka := "brokers given by -kafka"
	if r.cfg.kafka == "" || len(r.cfg.brokerPids) > 0 {
		kafka = "a KRaft cluster from its jars for each size, each broker its own process, on loopback, as many brokers as the row \"Kafka brokers\" says"
	}
	w("Apache Kafka %s (%s), the argosy-hub process, the argosy projector process on SQLite, "+
		"and the simulated clusters in spoke-pack processes of up to %d each, every one a real spoke.Agent with one Kafka client on a "+
		"simulated Argo CD (docs/bench.md). Everything shares the machine's %d cores, the brokers included. Goals are reported here, never asserted.\n\n",
		kafkatest.Version, kafka, r.cfg.perProcess, runtime.NumCPU())
}

// writeTable writes the table of the runs, one column a fleet size.
func (r *report) writeTable(w func(string, ...any)) {
	w("| | %s |\n", strings.Join(mapRuns(r.runs, func(x *run) string { return fmt.Sprintf("N = %d", x.n) }), " | "))
	w("|---|%s\n", strings.Repeat("---|", len(r.runs)))
	row := func(name string, f func(x *run) string) {
		w("| %s | %s |\n", name, strings.Join(mapRuns(r.runs, f), " | "))
	}
	row("Applications", func(x *run) string { return fmt.Sprint(x.n * r.cfg.apps) })
	row("spoke processes", func(x *run) string { return fmt.Sprint(x.procs) })
	row("Kafka brokers", func(x *run) string { return fmt.Sprint(x.brokers) })
	row("each spoke process's GOMEMLIMIT: its share of the memory available at its start, less 3 GiB", func(x *run) string { return mib(x.packMem) })
	row("TCP connections to the brokers, settled (to the busiest)", func(x *run) string { return fmt.Sprintf("%d (%d)", x.conns, x.busiest) })
	row(fmt.Sprintf("TCP connections to the brokers, %s later, idle: all / per spoke", settleIdle), func(x *run) string {
		return fmt.Sprintf("%d / %.2f", x.quiet, float64(x.quiet)/float64(x.n))
	})
	row("start to every cluster joined and connected", func(x *run) string { return x.online.Round(time.Second).String() })
	row("connection attempts dropped by full listen queues while joining (ListenOverflows)", func(x *run) string { return fmt.Sprint(x.dropped) })
	row("rollout: every Application applied everywhere", func(x *run) string { return x.rollout.Round(100 * time.Millisecond).String() })
	row("changes made / failed / never acknowledged", func(x *run) string {
		return fmt.Sprintf("%d / %d / %d", x.fan.changes, x.fan.failed, x.fan.lost)
	})
	row("changes answered per second", func(x *run) string { return fmt.Sprintf("%.1f", x.fan.achieved) })
	row("answer → applied ack: p50 / p99 / max", func(x *run) string {
		return fmt.Sprintf("%s / %s / %s", ms(pct(x.fan.ack, 50)), ms(pct(x.fan.ack, 99)), ms(pct(x.fan.ack, 100)))
	})
	row("answer → projector view: p50 / p99 / max (n followed; not shown within 2 min)", func(x *run) string {
		return fmt.Sprintf("%s / %s / %s (%d; %d)", ms(pct(x.fan.view, 50)), ms(pct(x.fan.view, 99)), ms(pct(x.fan.view, 100)),
			len(x.fan.view)+x.fan.viewMissed, x.fan.viewMissed)
	})
	row("projector ingestion, status deltas verified and folded", func(x *run) string { return fmt.Sprintf("%.0f events/s", x.ingest) })
	row(fmt.Sprintf("… the same deltas %d to an event, as a spoke sends a window", ingestBatch), func(x *run) string {
		return fmt.Sprintf("%.0f deltas/s (%.0f events/s)", x.ingestBatched, x.ingestBatched/ingestBatch)
	})
	row("live question (an Application's tree) through the hub, asked → answered: p50 / p99 / max (unanswered)", func(x *run) string {
		return fmt.Sprintf("%s / %s / %s (%d)", ms(pct(x.live, 50)), ms(pct(x.live, 99)), ms(pct(x.live, 100)), x.unanswered)
	})
	row("new spoke bootstrapped with its Applications", func(x *run) string { return x.boot.Round(time.Millisecond).String() })
	row("hub RSS: settled / peak", func(x *run) string { return mib(x.idle["hub"].rss) + " / " + mib(x.fan.after["hub"].peak) })
	row("projector RSS: settled / peak", func(x *run) string {
		return mib(x.idle["projector"].rss) + " / " + mib(x.fan.after["projector"].peak)
	})
	row("hub + projector peak RSS, ingestion included", func(x *run) string { return mib(x.hubProjPeak()) })
	row("spokes RSS: all / per spoke", func(x *run) string {
		return fmt.Sprintf("%s / %.2f MiB", mib(x.idle["spokes"].rss), float64(x.idle["spokes"].rss)/(1<<20)/float64(x.n))
	})
	row("projector RSS at the end of its ingestion: now / peak", func(x *run) string {
		return mib(x.ingestUsage.rss) + " / " + mib(x.ingestUsage.peak)
	})
	row("CPU in the change phase: whole machine / broker", func(x *run) string {
		return fmt.Sprintf("%.2f / %.2f of %d cores", x.fan.cores("machine"), x.fan.cores("broker"), runtime.NumCPU())
	})
	row("CPU in the change phase: hub / projector", func(x *run) string {
		return fmt.Sprintf("%.2f / %.2f cores", x.fan.cores("hub"), x.fan.cores("projector"))
	})
	row("CPU in the change phase: spokes all / per spoke", func(x *run) string {
		return fmt.Sprintf("%.2f cores / %.2f ms/s", x.fan.cores("spokes"), 1000*x.fan.cores("spokes")/float64(x.n))
	})
}

// writeProfiles writes the runs' CPU profiles.
func (r *report) writeProfiles(w func(string, ...any)) {
	w("## Where the time goes\n\nCPU profiles of %s of the change phase (`go tool pprof -top`), flat time first.\n\n", r.cfg.profile)
	for _, x := range r.runs {
		for _, p := range x.profiles {
			name, top, _ := strings.Cut(p, ": ")
			w("<details><summary>N = %d, %s</summary>\n\n```\n%s\n```\n</details>\n\n", x.n, name, trimTop(top))
		}
	}
}

// trimTop leaves out pprof's header lines about the file and build.
func trimTop(s string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func (r *report) writeGoals(w func(string, ...any)) {
	w("## Against the goals\n\n| Goal | Measured | |\n|---|---|---|\n")
	verdict := func(ok bool, by string) string {
		if ok {
			return "met"
		}
		return "missed by " + by
	}
	if len(r.runs) == 0 {
		w("\n")
		return
	}
	largest := r.runs[len(r.runs)-1]
	if largest.n < 10_000 {
		w("| 10,000 live spokes, 100,000 Applications, hub + projector ≤ 2 GiB RSS | not run (below); at N = %d: %s | not known |\n",
			largest.n, mib(largest.hubProjPeak()))
	}
	for _, x := range r.runs {
		if x.n >= 10_000 {
			peak := x.hubProjPeak()
			w("| %d live spokes, %d Applications, hub + projector ≤ 2 GiB RSS | %s | %s |\n", x.n, x.n*r.cfg.apps, mib(peak),
				verdict(peak <= 2<<30, mib(peak-2<<30)))
		}
		if x.n == 1000 {
			p50, p99 := pct(x.fan.ack, 50), pct(x.fan.ack, 99)
			w("| fan-out at %v changes/s over 1,000 clusters: p50 ≤ 50 ms | %s | %s |\n", r.cfg.rate, ms(p50), verdict(p50 <= 50*time.Millisecond, ms(p50-50*time.Millisecond)))
			w("| … p99 ≤ 250 ms | %s | %s |\n", ms(p99), verdict(p99 <= 250*time.Millisecond, ms(p99-250*time.Millisecond)))
		}
		w("| N = %d: status ingestion ≥ 30k events/s, verified | %.0f events/s | %s |\n", x.n, x.ingest,
			verdict(x.ingest >= 30_000, fmt.Sprintf("%.0f events/s", 30_000-x.ingest)))
		if p99 := pct(x.live, 99); len(x.live) > 0 {
			w("| N = %d: a live question (tree) answered through Kafka within 2 s, p99 | %s (%d unanswered) | %s |\n", x.n, ms(p99), x.unanswered,
				verdict(p99 <= 2*time.Second && x.unanswered == 0, ms(p99-2*time.Second)))
		}
		w("| N = %d: a new spoke with %d Applications bootstrapped ≤ 2 s | %s | %s |\n", x.n, r.cfg.bootApps, x.boot.Round(time.Millisecond),
			verdict(x.boot <= 2*time.Second, (x.boot-2*time.Second).Round(time.Millisecond).String()))
	}
	for _, c := range r.wire {
		if c.Codec != producerCodec {
			continue
		}
		w("| a status delta alone on the wire, all in, %s ≤ 600 B | %.0f B | %s |\n", c.Codec, c.Alone, verdict(c.Alone <= 600, fmt.Sprintf("%.0f B", c.Alone-600)))
		w("| five of a cluster's deltas in one batch event, %s ≤ 200 B each | %.0f B | %s |\n", c.Codec, c.Batched, verdict(c.Batched <= 200, fmt.Sprintf("%.0f B", c.Batched-200)))
	}
	w("\n")
}

func (r *report) writeWire(w func(string, ...any)) {
	if r.sample == nil {
		return
	}
	w("## Bytes per status change on the wire\n\n")
	w("%d real status deltas from the N = %d run's status topic (sent alone or in batches), signed again as an agent signs them, appended to new "+
		"topics with each codec and read back as the broker stores and serves them: record batches with their headers, keys, values and batch "+
		"overhead, per delta. \"Alone\": one delta in an `application.changed` event, as a spoke sends a lone change. \"Batched\": five deltas "+
		"of one cluster in one `applications.changed` event, as a spoke sends the changes of one window. \"Full Application\": the whole Argo CD Application object "+
		"(bench/fleet/testdata/application.json, %d B of JSON) alone, what a stream of whole objects would send for each change.\n\n",
		r.sample.Records, r.runs[0].n, r.sample.FullApp)
	w("| codec | alone | batched (5) | full Application |\n|---|---|---|---|\n")
	for _, c := range r.wire {
		mark := ""
		if c.Codec == producerCodec {
			mark = " (Argosy's)"
		}
		w("| %s%s | %.0f B | %.0f B | %.0f B |\n", c.Codec, mark, c.Alone, c.Batched, c.Full)
	}
	w("\nWhat one delta holds before compression: value %.0f B, key %.0f B, headers", r.sample.Value, r.sample.Key)
	names := make([]string, 0, len(r.sample.Headers))
	for k := range r.sample.Headers {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return int(r.sample.Headers[b] - r.sample.Headers[a]) })
	for i, k := range names {
		sep := ","
		if i == 0 {
			sep = ""
		}
		w("%s `%s` %.0f B", sep, k, r.sample.Headers[k])
	}
	w(" (name and value).\n\n")
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if total := meminfo("MemTotal"); total > 0 {
		mem = fmt.Sprintf(", %.0f GiB", float64(total)/(1<<30))
	}
	return fmt.Sprintf("%d × %s%s, %s", runtime.NumCPU(), model, mem, runtime.Version())
}

func (r *report) plots() error {
	// Latency CDF: one line per fleet size and measure.
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Fan-out latency at %v single-cluster changes/s", r.cfg.rate)
	p.X.Label.Text = "ms after the hub's answer"
	p.Y.Label.Text = "fraction of changes"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	var lines []any
	for _, x := range r.runs {
		for _, m := range []struct {
			name string
			d    []time.Duration
		}{{"applied ack", x.fan.ack}, {"projector view", x.fan.view}} {
			if len(m.d) == 0 {
				continue
			}
			pts := make(plotter.XYs, len(m.d))
			for i, d := range m.d {
				pts[i] = plotter.XY{X: max(float64(d)/float64(time.Millisecond), 0.1), Y: float64(i+1) / float64(len(m.d))}
			}
			lines = append(lines, fmt.Sprintf("N=%d %s", x.n, m.name), pts)
		}
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YOffs = vg.Points(40)
	if err := p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(r.cfg.out, r.date()+"-latency.png")); err != nil {
		return err
	}
	// Throughput and memory against N.
	tp, mem := plot.New(), plot.New()
	tp.Title.Text, mem.Title.Text = "Projector ingestion against fleet size", "Memory against fleet size"
	tp.X.Label.Text, mem.X.Label.Text = "clusters", "clusters"
	tp.Y.Label.Text, mem.Y.Label.Text = "status events/s, verified and folded", "RSS, MiB"
	var ing, hub, proj, spokes plotter.XYs
	for _, x := range r.runs {
		n := float64(x.n)
		ing = append(ing, plotter.XY{X: n, Y: x.ingest})
		hub = append(hub, plotter.XY{X: n, Y: float64(x.fan.after["hub"].peak) / (1 << 20)})
		proj = append(proj, plotter.XY{X: n, Y: float64(x.fan.after["projector"].peak) / (1 << 20)})
		spokes = append(spokes, plotter.XY{X: n, Y: float64(x.idle["spokes"].rss) / (1 << 20)})
	}
	if len(r.runs) > 1 {
		tp.X.Scale, tp.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		mem.X.Scale, mem.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	if err := plotutil.AddLinePoints(tp, "ingestion", ing); err != nil {
		return err
	}
	if err := plotutil.AddLinePoints(mem, "hub (peak)", hub, "projector (peak)", proj, "all spokes", spokes); err != nil {
		return err
	}
	mem.Legend.Top, mem.Legend.Left = true, true
	goal := plotter.NewFunction(func(float64) float64 { return 30_000 })
	goal.Color, goal.Dashes = color.RGBA{R: 200, A: 255}, []vg.Length{vg.Points(4), vg.Points(4)}
	tp.Add(goal)
	tp.Legend.Add("goal", goal)
	tp.Y.Min = 0
	img := vgimgCanvas(12*vg.Inch, 4.5*vg.Inch)
	return img.save([]*plot.Plot{tp, mem}, filepath.Join(r.cfg.out, r.date()+"-scale.png"))
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

func mapRuns(rs []*run, f func(*run) string) []string {
	out := make([]string, len(rs))
	for i, x := range rs {
		out[i] = f(x)
	}
	return out
}

// tiles draws plots side by side into one PNG.
type tiles struct{ w, h vg.Length }

func vgimgCanvas(w, h vg.Length) tiles { return tiles{w, h} }

func (t tiles) save(ps []*plot.Plot, path string) error {
	img := vgimg.New(t.w, t.h)
	dc := draw.New(img)
	grid := draw.Tiles{Rows: 1, Cols: len(ps), PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{ps}, grid, dc)
	for i, p := range ps {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return errors.Join(err, f.Close())
}
