package repo

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

var ignore = cmp.Options{cmpopts.IgnoreUnexported(apicmd.Options{}, apicmd.WriteFlags{}),
	cmpopts.IgnoreFields(RepoAddOptions{}, "IO"), cmpopts.IgnoreFields(apicmd.ListOptions{}, "IO"), cmpopts.IgnoreFields(RepoRemoveOptions{}, "IO")}

func TestRepoAddFlags(t *testing.T) {
	table := apicmd.WriteFlags{Output: "table"}
	base := []string{"charts", "--cluster", "prod", "--url", "https://charts.example.com"}
	tests := []struct {
		args    []string
		want    RepoAddOptions
		wantErr string
	}{
		{args: append(base, "--type", "helm", "--project", "web"),
			want: RepoAddOptions{Write: table, Name: "charts", Cluster: "prod", Namespace: "argocd", URL: "https://charts.example.com", Type: "helm", Project: "web"}},
		{args: append(base, "--username", "bot", "--password-stdin", "--overwrite", "-n", "argo"),
			want: RepoAddOptions{Write: table, Name: "charts", Cluster: "prod", Namespace: "argo", URL: "https://charts.example.com", Type: "git",
				Username: "bot", PasswordStdin: true, Overwrite: true}},
		{args: append(base, "--ssh-private-key-file", "k", "--if-generation", "3", "--dry-run"),
			want: RepoAddOptions{Write: apicmd.WriteFlags{Output: "table", DryRun: true}, Name: "charts", Cluster: "prod", Namespace: "argocd",
				URL: "https://charts.example.com", Type: "git", SSHKeyFile: "k", IfGeneration: func() *int64 { g := int64(3); return &g }()}},
		{args: []string{"charts", "--url", "u"}, wantErr: "--cluster is required"},
		{args: []string{"charts", "--cluster", "c"}, wantErr: "--url is required"},
		{args: append(base, "--type", "oci"), wantErr: `--type "oci": want git or helm`},
		{args: append(base, "--password-stdin"), wantErr: "a password needs --username"},
		{args: append(base, "--username", "bot"), wantErr: "--username needs a password: --password-stdin or --password-file"},
		{args: append(base, "--username", "bot", "--password-stdin", "--password-file", "f"), wantErr: "give --password-stdin or --password-file, not both"},
		{args: append(base, "--username", "bot", "--password-file", "f", "--ssh-private-key-file", "k"), wantErr: "give a password or an SSH private key, not both"},
		{args: append(base, "--password", "hunter2"), wantErr: "unknown flag: --password"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := cmdtest.Parse(t, NewCmdRepoAdd, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got, ignore); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRepoListRemoveFlags(t *testing.T) {
	list, err := cmdtest.Parse(t, NewCmdRepoList, []string{"--cluster", "prod", "--deleted"})
	if want := (apicmd.ListOptions{Output: "table", Cluster: "prod", Deleted: true}); err != nil || !cmp.Equal(want, *list, ignore) {
		t.Errorf("list: %v (-want +got):\n%s", err, cmp.Diff(want, *list, ignore))
	}
	rm, err := cmdtest.Parse(t, NewCmdRepoRemove, []string{"charts", "--cluster", "prod", "-o", "yaml"})
	if want := (RepoRemoveOptions{Write: apicmd.WriteFlags{Output: "yaml"}, Name: "charts", Cluster: "prod", Namespace: "argocd"}); err != nil || !cmp.Equal(want, *rm, ignore) {
		t.Errorf("remove: %v (-want +got):\n%s", err, cmp.Diff(want, *rm, ignore))
	}
	_, err = cmdtest.Parse(t, NewCmdRepoRemove, []string{"charts"})
	if err == nil || !errors.As(err, new(*cmdkit.FlagError)) || !strings.Contains(err.Error(), "--cluster is required") {
		t.Errorf("remove without --cluster: %v", err)
	}
}

// TestRepoCommands adds repositories with each kind of credentials,
// conflicts, replaces one, lists and removes them against a hub, and
// checks that no secret is printed.
func TestRepoCommands(t *testing.T) {
	cmdtest.Isolate(t)
	h := cmdtest.StartHub(t)
	h.RegisterWithKeys("prod")
	dir := t.TempDir()
	const password, key = "s3cr3t-pass", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n"
	pwFile, keyFile := filepath.Join(dir, "pw"), filepath.Join(dir, "key")
	if err := os.WriteFile(pwFile, []byte(password+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, args ...string) (string, string, error) {
		t.Helper()
		stdout, stderr, err := cmdtest.RunWithInput(t, NewCmdRepo, stdin, append(append([]string{"repo"}, args...), "--server", h.URL, "--token", h.Admin)...)
		if strings.Contains(stdout+stderr, "s3cr3t") || strings.Contains(stdout+stderr, "PRIVATE KEY") {
			t.Errorf("%s printed a secret:\n%s%s", args, stdout, stderr)
		}
		return stdout, stderr, err
	}
	lastRequest := func() api.RepositoryRequest {
		t.Helper()
		reqs := h.Requests()
		var req api.RepositoryRequest
		if err := json.Unmarshal([]byte(reqs[len(reqs)-1].Body), &req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	zero, one := int64(0), int64(1)
	tests := []struct {
		stdin string
		args  []string
		want  api.RepositoryRequest
	}{
		{password + "\n", []string{"add", "apps", "--cluster", "prod", "--url", "https://git.example/apps.git", "--username", "bot", "--password-stdin"},
			api.RepositoryRequest{URL: "https://git.example/apps.git", Type: "git", Credentials: map[string]string{"username": "bot", "password": password}, ExpectedGeneration: &zero}},
		{"", []string{"add", "infra", "--cluster", "prod", "--url", "git@git.example:infra.git", "--ssh-private-key-file", keyFile, "--project", "platform"},
			api.RepositoryRequest{URL: "git@git.example:infra.git", Type: "git", Project: "platform", Credentials: map[string]string{"sshPrivateKey": key}, ExpectedGeneration: &zero}},
		{"", []string{"add", "apps", "--cluster", "prod", "--url", "https://git.example/apps2.git", "--username", "bot", "--password-file", pwFile, "--overwrite", "-o", "json"},
			api.RepositoryRequest{URL: "https://git.example/apps2.git", Type: "git", Credentials: map[string]string{"username": "bot", "password": password}, ExpectedGeneration: &one}},
		{"", []string{"add", "charts", "--cluster", "prod", "--url", "https://charts.example", "--type", "helm"},
			api.RepositoryRequest{URL: "https://charts.example", Type: "helm", Credentials: map[string]string{}, ExpectedGeneration: &zero}},
	}
	for _, tc := range tests {
		if _, _, err := run(tc.stdin, tc.args...); err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if diff := cmp.Diff(tc.want, lastRequest(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s sent (-want +got):\n%s", tc.args, diff)
		}
	}
	_, _, err := run("", "add", "charts", "--cluster", "prod", "--url", "https://charts.example")
	if want := "the hub refused the request (409 Conflict): repository argocd/charts on cluster \"prod\" already exists (generation 1)\n" +
		"  next: to replace it: argosy repo add charts --cluster prod … --overwrite"; err == nil || err.Error() != want {
		t.Errorf("add again: %v, want\n%s", err, want)
	}
	_, _, err = run("\n", "add", "x", "--cluster", "prod", "--url", "https://x", "--username", "bot", "--password-stdin")
	if err == nil || err.Error() != "the password read is empty" {
		t.Errorf("empty password: %v", err)
	}
	stdout, _, err := run("", "list", "--cluster", "prod")
	want := "CLUSTER  NAMESPACE  NAME    URL                            PROJECT   GENERATION\n" +
		"prod     argocd     apps    https://git.example/apps2.git  -         2\n" +
		"prod     argocd     charts  https://charts.example         -         1\n" +
		"prod     argocd     infra   git@git.example:infra.git      platform  1\n"
	if err != nil || stdout != want {
		t.Errorf("list: %v\n%s\nwant\n%s", err, stdout, want)
	}
	if _, _, err := run("", "remove", "charts", "--cluster", "prod"); err != nil {
		t.Fatal(err)
	}
	if r := h.Requests()[len(h.Requests())-1]; r.Method != "DELETE" || r.Path != "/api/v1/clusters/prod/repositories/argocd/charts" || r.Query != "" {
		t.Errorf("remove sent %s %s?%s", r.Method, r.Path, r.Query)
	}
	if _, _, err := run("", "remove", "charts", "--cluster", "prod"); err == nil || !strings.Contains(err.Error(), "(404 Not Found): no repositor") {
		t.Errorf("remove again: %v", err)
	}
}

func TestRepoHelp(t *testing.T) {
	cmdtest.ReadCommandsHelp(t, NewCmdRepo, []string{"repo", "add"}, []string{"repo", "list"}, []string{"repo", "remove"})
}
