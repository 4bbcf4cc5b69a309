//go:build integration

package cli_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/spoke/kube"
)

// BenchmarkSpokeFootprint runs the real binary with 100 Applications and
// reports its resident memory and its CPU use once idle (make bench; the
// numbers are measurements, never test verdicts). One iteration is the whole
// measurement, so run it with -benchtime 1x.
func BenchmarkSpokeFootprint(b *testing.B) {
	for b.Loop() {
		mem, millicores := footprint(b)
		b.ReportMetric(float64(mem["VmRSS"]), "KiB-RSS")
		b.ReportMetric(float64(mem["RssAnon"]), "KiB-RSS-anon")
		b.ReportMetric(float64(mem["RssFile"]), "KiB-RSS-file")
		b.ReportMetric(millicores, "idle-millicores")
	}
}

func footprint(t testing.TB) (mem map[string]int, millicores float64) {
	r := newSpokeRig(t)
	r.heartbeat = "30s"                     // the default: idle means idle
	r.leaseTiming = kube.DefaultLeaseTiming // renewed every 2 s, as in production
	r.env = strings.Fields(os.Getenv("ARGOSY_FOOTPRINT_ENV"))
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("fp-%03d-%s", i, r.ns)
	}
	r.upserts(1, names...)
	p := r.start()
	defer func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	for _, n := range names {
		r.waitGeneration(p, n, "1")
	}
	time.Sleep(5 * time.Second) // let the status deltas settle
	cpu0 := cpuTicks(t, p.Pid())
	const idle = 20 * time.Second
	time.Sleep(idle)
	cpu1 := cpuTicks(t, p.Pid())
	millicores = float64(cpu1-cpu0) / 100 / idle.Seconds() * 1000 // USER_HZ is 100 on Linux
	return memKiB(t, p.Pid()), millicores
}

// memKiB reads the resident set of a process from /proc: VmRSS, and its
// anonymous (heap, stacks) and file-backed (the binary's pages) parts.
func memKiB(t testing.TB, pid int) map[string]int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "RssAnon" && k != "RssFile") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		if err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	if out["VmRSS"] == 0 {
		t.Fatal("no VmRSS")
	}
	return out
}

// cpuTicks is the process's user plus system time, in clock ticks.
func cpuTicks(t testing.TB, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest) // f[0] is the state; utime and stime are fields 14 and 15 of stat
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parse /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return ut + st
}
