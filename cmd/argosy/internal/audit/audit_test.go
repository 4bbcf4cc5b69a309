package audit

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

var ignoreIO = cmpopts.IgnoreUnexported(apicmd.Options{})

func TestAuditFlags(t *testing.T) {
	t.Setenv(apicmd.EnvServer, "")
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		args    []string
		want    AuditOptions
		wantErr string
	}{
		{args: nil, want: AuditOptions{Output: "table", Group: GroupAction}},
		{args: []string{"--cluster", "prod-eu", "-n", "argocd", "--app", "guestbook", "--actor", "alice", "--since", "24h",
			"--limit", "10", "-o", "yaml"},
			want: AuditOptions{Output: "yaml", Cluster: "prod-eu", Namespace: "argocd", App: "guestbook", Actor: "alice",
				Since: 24 * time.Hour, Limit: 10, Group: GroupAction}},
		{args: []string{"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-01T01:00:00.5+01:00"},
			want: AuditOptions{Output: "table", From: from, To: time.Date(2026, 3, 1, 0, 0, 0, 5e8, time.UTC), Group: GroupAction}},
		{args: []string{"--group", "none", "--reads", "--limit", "1000"}, want: AuditOptions{Output: "table", Group: GroupNone, Reads: true, Limit: 1000}},
		{args: []string{"--limit", "1000"}, wantErr: "--limit 1000: want 1 to 500 (1000 with --group none)"},
		{args: []string{"--group", "cluster"}, wantErr: `--group "cluster": want action or none`},
		{args: []string{"--since", "1h", "--from", "2026-03-01T00:00:00Z"}, wantErr: "not both"},
		{args: []string{"--to", "03/01/2026"}, wantErr: `--to "03/01/2026"`},
		{args: []string{"--limit", "-1"}, wantErr: "--limit -1"},
		{args: []string{"--since", "yesterday"}, wantErr: "invalid argument"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := cmdtest.Parse(t, NewCmdAudit, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got, ignoreIO, cmpopts.IgnoreFields(AuditOptions{}, "IO", "Now"),
				cmpopts.EquateApproxTime(0)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("verify -o yaml", func(t *testing.T) {
		v, err := cmdtest.Parse(t, NewCmdAuditVerify, []string{"-o", "yaml"})
		if err != nil || v.Output != "yaml" || v.API.Server != "" {
			t.Errorf("audit verify: %+v, %v", v, err)
		}
	})
}

// TestReadCommands runs `argosy audit` and `argosy audit verify` against
// the read API serving readtest.Fleet and compares their output with a
// golden file.
func TestReadCommands(t *testing.T) {
	cmdtest.ReadCommands(t, newCmd, cmdtest.ReadServer(t, readtest.Fleet()), []cmdtest.Golden{
		{File: "audit.txt", Args: []string{"audit"}},
		{File: "audit-entries.txt", Args: []string{"audit", "--group", "none", "--reads"}},
		{File: "audit-filtered.json", Args: []string{"audit", "--group", "none", "--cluster", "prod-eu", "--actor", "bob", "--from", "2026-03-02T10:00:00Z",
			"--to", "2026-03-02T12:00:00Z", "--limit", "1", "-o", "json"}},
		{File: "audit-verify.txt", Args: []string{"audit", "verify"}},
	})
}

// TestAuditTimeline runs `argosy audit` over a placement edit on 20
// clusters: one row, alice's, with the clusters' results counted; reads
// only with --reads; every cluster's entry with --group none, each naming
// alice via the placer.
func TestAuditTimeline(t *testing.T) {
	cmdtest.ReadCommands(t, newCmd, cmdtest.ReadServer(t, readtest.PlacementEdit(20)), []cmdtest.Golden{
		{File: "audit-placement.txt", Args: []string{"audit"}},
		{File: "audit-placement-reads.txt", Args: []string{"audit", "--reads"}},
		{File: "audit-placement-app.txt", Args: []string{"audit", "--app", "guestbook"}},
		{File: "audit-placement-clusters.txt", Args: []string{"audit", "--app", "guestbook", "--group", "none", "--limit", "5"}},
		{File: "audit-placement.json", Args: []string{"audit", "--actor", "mallory", "-o", "json"}},
	})
}

func newCmd(io cmdkit.IOStreams) *cobra.Command { return NewCmdAudit(io, nil) }

func TestAuditVerifyBroken(t *testing.T) {
	q := readtest.Fleet()
	q.Entries[2].Name = "payroll" // argosy.config/0 at offset 12
	out, _, err := cmdtest.Run(t, newCmd, "audit", "verify", "--server", cmdtest.ReadServer(t, q))
	if !errors.Is(err, ErrChainBroken) || errors.As(err, new(*cmdkit.FlagError)) {
		t.Fatalf("error %v, want ErrChainBroken", err)
	}
	if want := "audit chain broken: argosy.config partition 0 at offset 12: hash does not match the entry's content (the entry was changed)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	cmdtest.CompareGolden(t, "audit-verify-broken.txt", out)
}

// TestReadCommandErrors checks what `argosy audit` says when it is given
// badly.
func TestReadCommandErrors(t *testing.T) {
	cmdtest.ReadCommandErrors(t, newCmd, []cmdtest.Failure{
		{Args: []string{"audit", "nope"}, FlagError: true, Text: `unknown command "nope"`},
		{Args: []string{"audit", "--since", "1h", "--from", "2026-03-01T00:00:00Z"}, FlagError: true, Text: "give --since or --from, not both"},
		{Args: []string{"audit", "--from", "yesterday"}, FlagError: true, Text: `--from "yesterday": want an RFC 3339 time`},
		{Args: []string{"audit", "--limit", "5000", "--group", "none"}, FlagError: true, Text: "--limit 5000: want 1 to 1000"},
		{Args: []string{"audit", "--limit", "600"}, FlagError: true, Text: "--limit 600: want 1 to 500"},
		{Args: []string{"audit", "--since", "-1h"}, FlagError: true, Text: "want a positive duration"},
		{Args: []string{"audit", "--from", "2026-03-02T00:00:00Z", "--to", "2026-03-01T00:00:00Z"}, FlagError: true,
			Text: "--from must be before --to"},
	})
}

func TestReadCommandsHelp(t *testing.T) {
	cmdtest.ReadCommandsHelp(t, newCmd, []string{"audit"}, []string{"audit", "verify"})
}

func TestAuditSince(t *testing.T) {
	cmdtest.Isolate(t)
	var out bytes.Buffer
	opts := &AuditOptions{IO: cmdkit.IOStreams{Out: &out}, API: apicmd.Options{Server: cmdtest.ReadServer(t, readtest.Fleet())},
		Output: "table", Since: 61 * time.Minute, Now: readtest.Now, Group: GroupNone, Reads: true}
	if err := auditRun(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 4 || !strings.Contains(out.String(), "api/applications.upsert") {
		t.Errorf("--since 61m listed %d lines, want a header and 3 entries:\n%s", lines, out.String())
	}
}

// TestAuditShowsRefusedReplay: an entry the projector refused as a replay
// says so in RESULT, and not its event's acknowledgements.
func TestAuditShowsRefusedReplay(t *testing.T) {
	cmdtest.Isolate(t)
	q := readtest.Fleet()
	i := slices.IndexFunc(q.AuditRows, func(r projector.AuditRow) bool { return r.EventID == "ev-guestbook" })
	replay := q.AuditRows[i]
	replay.Offset, replay.At = 13, readtest.Now().Add(-time.Minute)
	replay.Before, replay.After, replay.Results = nil, nil, nil
	replay.Refused = "generation 3 is not newer than the object's generation 3 (event ev-guestbook)"
	q.AuditRows = append(q.AuditRows, replay)
	out, _, err := cmdtest.Run(t, newCmd, "audit", "--app", "guestbook", "--cluster", "prod-eu", "--limit", "1",
		"--server", cmdtest.ReadServer(t, q))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "refused: replay") || strings.Contains(out, "applied") {
		t.Errorf("the replay's line does not say it was refused:\n%s", out)
	}
}

// TestAuditOfHostileSpecs: an audit history that holds a change to a
// spec nested 9,998 levels deep, from one of more than 1 MiB, is listed,
// with a note for each spec the read API left out and why; -o json
// prints the marker in the spec's place.
func TestAuditOfHostileSpecs(t *testing.T) {
	server := cmdtest.ReadServer(t, readtest.Hostile())
	stdout, stderr, err := cmdtest.Run(t, newCmd, "audit", "--server", server)
	if err != nil {
		t.Fatalf("argosy audit: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "applications/argocd/guestbook") {
		t.Errorf("the listing lacks the change:\n%s", stdout)
	}
	for _, want := range []string{
		"Note: the spec before the change of applications/argocd/guestbook at 2026-03-02T10:00:00Z (event ev-guestbook) is too large to show: 1052589 bytes (the read API answers with specs up to 1048576 bytes)",
		"Note: the spec after the change of applications/argocd/guestbook at 2026-03-02T10:00:00Z (event ev-guestbook) is too deep to show: 9998 levels, 60069 bytes (the read API answers with specs up to 100 levels deep)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	stdout, _, err = cmdtest.Run(t, newCmd, "audit", "--server", server, "-o", "json")
	if err != nil || !strings.Contains(stdout, `"$omitted": {`) || !strings.Contains(stdout, `"depth": 9998`) {
		t.Errorf("argosy audit -o json: %v\n%.2000s", err, stdout)
	}
}
