package report

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

func TestReportDeploymentsFlags(t *testing.T) {
	t.Setenv(apicmd.EnvServer, "")
	tests := []struct {
		args    []string
		want    read.ReportParams
		output  string
		wantErr string
	}{
		{args: []string{"--by", "app"}, want: read.ReportParams{By: "app", Bucket: "day"}, output: "table"},
		{args: []string{"--by", "app", "--app", "argocd/guestbook"}, want: read.ReportParams{By: "app", Bucket: "day", App: "argocd/guestbook"},
			output: "table"},
		{args: []string{"--by", "label", "--label", "team", "--bucket", "week", "--from", "2026-01-01T00:00:00Z", "-o", "csv"},
			want:   read.ReportParams{By: "label", Label: "team", Bucket: "week", From: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
			output: "csv"},
		{args: []string{"--by", "project", "--to", "2026-01-01T00:00:00Z", "--from", "2026-01-02T00:00:00Z"},
			wantErr: "--from must be before --to"},
		{args: []string{"--by", "app", "extra"}, wantErr: `unknown command "extra"`},
		{args: nil, wantErr: "--by is required"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := cmdtest.Parse(t, NewCmdReportDeployments, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.ReportParams); diff != "" || got.Output != tc.output {
				t.Errorf("output %q, params (-want +got):\n%s", got.Output, diff)
			}
		})
	}
}

// TestReadCommands runs `argosy report deployments` against the read API
// serving readtest.Fleet and compares its output with a golden file.
func TestReadCommands(t *testing.T) {
	cmdtest.ReadCommands(t, NewCmdReport, cmdtest.ReadServer(t, readtest.Fleet()), []cmdtest.Golden{
		{File: "report-app.txt", Args: []string{"report", "deployments", "--by", "app", "--to", "2026-03-02T12:00:00Z"}},
		{File: "report-app-guestbook.txt", Args: []string{"report", "deployments", "--by", "app", "--app", "argocd/guestbook",
			"--to", "2026-03-02T12:00:00Z"}},
		{File: "report-app.json", Args: []string{"report", "deployments", "--by", "app", "--to", "2026-03-02T12:00:00Z", "-o", "json"}},
		{File: "report-cluster-week.csv", Args: []string{"report", "deployments", "--by", "cluster", "--bucket", "week",
			"--from", "2026-02-01T00:00:00Z", "--to", "2026-03-03T00:00:00Z", "-o", "csv"}},
		{File: "report-label.json", Args: []string{"report", "deployments", "--by", "label", "--label", "team",
			"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-03T00:00:00Z", "-o", "json"}},
		{File: "report-label.txt", Args: []string{"report", "deployments", "--by", "label", "--label", "team",
			"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-03T00:00:00Z"}},
		{File: "rollouts.txt", Args: []string{"report", "rollouts", "--to", "2026-03-02T12:00:00Z"}},
		{File: "rollouts-placement.txt", Args: []string{"report", "rollouts", "--placement", "argocd/guestbook",
			"--to", "2026-03-02T12:00:00Z"}},
		{File: "rollouts.csv", Args: []string{"report", "rollouts", "--to", "2026-03-02T12:00:00Z", "-o", "csv"}},
	})
}

// TestReadCommandErrors checks what `argosy report deployments` says when
// it is given badly.
func TestReadCommandErrors(t *testing.T) {
	cmdtest.ReadCommandErrors(t, NewCmdReport, []cmdtest.Failure{
		{Args: []string{"report", "deployments"}, FlagError: true, Text: "--by is required"},
		{Args: []string{"report", "deployments", "--by", "team"}, FlagError: true, Text: `--by "team": want one of app, project, cluster, label`},
		{Args: []string{"report", "deployments", "--by", "label"}, FlagError: true, Text: "--by label needs --label KEY"},
		{Args: []string{"report", "deployments", "--by", "app", "--label", "team"}, FlagError: true, Text: "--label goes with --by label only"},
		{Args: []string{"report", "deployments", "--by", "cluster", "--app", "argocd/guestbook"}, FlagError: true, Text: "--app goes with --by app only"},
		{Args: []string{"report", "deployments", "--by", "app", "--app", "guestbook"}, FlagError: true, Text: `--app "guestbook": want namespace/name`},
		{Args: []string{"report", "deployments", "--by", "app", "--bucket", "month"}, FlagError: true, Text: `--bucket "month"`},
		{Args: []string{"report", "deployments", "--by", "app", "-o", "xml"}, FlagError: true,
			Text: `unknown output format "xml": want one of table, json, yaml, csv`},
		{Args: []string{"report", "rollouts", "--placement", "guestbook"}, FlagError: true, Text: `--placement "guestbook": want NAMESPACE/NAME`},
		{Args: []string{"report", "rollouts", "--from", "2026-03-02T00:00:00Z", "--to", "2026-03-01T00:00:00Z"}, FlagError: true,
			Text: "--from must be before --to"},
	})
}

func TestReadCommandsHelp(t *testing.T) {
	cmdtest.ReadCommandsHelp(t, NewCmdReport, []string{"report", "deployments"}, []string{"report", "rollouts"})
}

// TestReportGapNote checks that the groups with deployment gaps are named
// on stderr, away from the table or CSV on stdout.
func TestReportGapNote(t *testing.T) {
	out, errOut, err := cmdtest.Run(t, NewCmdReport,
		"report", "deployments", "--by", "cluster", "-o", "csv", "--server", cmdtest.ReadServer(t, readtest.Fleet()))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Deployment gaps may hide deployments of: prod-us (1); their numbers may be too low.\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	if !strings.HasPrefix(out, "group,start,end,") {
		t.Errorf("stdout:\n%s", out)
	}
}
