package report

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	const year = 365 * 24 * time.Hour
	tests := []struct {
		name string
		in   []time.Duration
		want *Durations
	}{
		{"none", nil, nil},
		{"one", []time.Duration{time.Minute}, &Durations{Count: 1, Median: time.Minute, P90: time.Minute, Mean: time.Minute}},
		// Sorted 1h, 2h, 4h: the middle one; (1+2+4)h/3 = 2h20m.
		{"odd", []time.Duration{4 * time.Hour, time.Hour, 2 * time.Hour},
			&Durations{Count: 3, Median: 2 * time.Hour, P90: 4 * time.Hour, Mean: 2*time.Hour + 20*time.Minute}},
		// Sorted 1h, 2h, 4h, 10h: (2h+4h)/2 = 3h; 17h/4 = 4h15m.
		{"even", []time.Duration{10 * time.Hour, 2 * time.Hour, 4 * time.Hour, time.Hour},
			&Durations{Count: 4, Median: 3 * time.Hour, P90: 10 * time.Hour, Mean: 4*time.Hour + 15*time.Minute}},
		// Ten, 1h to 10h: rank 9 is 9h; twenty, 1h to 20h: rank 18 is 18h.
		{"ten", hours(10), &Durations{Count: 10, Median: 5*time.Hour + 30*time.Minute, P90: 9 * time.Hour, Mean: 5*time.Hour + 30*time.Minute}},
		{"twenty", hours(20), &Durations{Count: 20, Median: 10*time.Hour + 30*time.Minute, P90: 18 * time.Hour, Mean: 10*time.Hour + 30*time.Minute}},
		// 1ns + 2ns = 3ns over 2: both truncate to 1ns.
		{"truncated", []time.Duration{2, 1}, &Durations{Count: 2, Median: 1, P90: 2, Mean: 1}},
		// The sum, 590 years, is more than a time.Duration holds (292);
		// the mean is 590 × 8,760h / 3 = 1,722,800h.
		{"no overflow", []time.Duration{200 * year, 200 * year, 190 * year},
			&Durations{Count: 3, Median: 200 * year, P90: 200 * year, Mean: 1722800 * time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, summarize(tt.in)); diff != "" {
				t.Errorf("summarize (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDurationsJSON(t *testing.T) {
	in := Durations{Count: 3, Median: 2 * time.Hour, P90: 4 * time.Hour, Mean: 2*time.Hour + 20*time.Minute + 500*time.Millisecond}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if want := `{"count":3,"medianSeconds":7200,"p90Seconds":14400,"meanSeconds":8400.5}`; string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
	var out Durations
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestRowJSON checks that absent summaries are absent, not zero.
func TestRowJSON(t *testing.T) {
	r := Row{Group: "shop", Start: jan(1, 0, 0), End: jan(8, 0, 0), Failures: 1, ChangeFailureRate: 1, Unrestored: 1}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	want := `{"group":"shop","start":"2024-01-01T00:00:00Z","end":"2024-01-08T00:00:00Z","deployments":0,"failures":1,"unchanged":0,"degraded":0,` +
		`"deploymentsPerDay":0,"changeFailureRate":1,"unrestored":1,"leadTimeUnknown":0}`
	if string(b) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", b, want)
	}
}

// hours returns 1h, 2h, … nh, shuffled.
func hours(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration((i*7)%n+1) * time.Hour
	}
	return out
}
