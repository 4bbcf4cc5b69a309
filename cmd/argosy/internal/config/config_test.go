package config_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
)

func TestPath(t *testing.T) {
	t.Setenv(config.EnvConfig, "/etc/argosy.yaml")
	if p, err := config.Path(); err != nil || p != "/etc/argosy.yaml" {
		t.Errorf("Path with %s set: %q, %v", config.EnvConfig, p, err)
	}
	t.Setenv(config.EnvConfig, "")
	t.Setenv("XDG_CONFIG_HOME", "/home/u/.config")
	want := "/home/u/.config/argosy/config.yaml"
	if runtime.GOOS != "linux" {
		dir, err := os.UserConfigDir()
		if err != nil {
			t.Fatal(err)
		}
		want = filepath.Join(dir, "argosy", "config.yaml")
	}
	if p, err := config.Path(); err != nil || p != want {
		t.Errorf("Path: %q, %v; want %q", p, err, want)
	}
}

// TestLoad checks what Load makes of a missing file, a good one, and bad
// ones: the error names the file.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content string // none: no file
		want    *config.Config
		wantErr string
	}{
		{name: "missing", want: &config.Config{}},
		{name: "empty", content: "\n", want: &config.Config{}},
		{name: "contexts", content: `currentContext: prod
contexts:
- name: prod
  server: https://hub.example.com
  token: t0k3n
  project: payments
- name: dev
  server: http://127.0.0.1:8080
`, want: &config.Config{CurrentContext: "prod", Contexts: []config.Context{
			{Name: "prod", Server: "https://hub.example.com", Token: "t0k3n", Project: "payments"},
			{Name: "dev", Server: "http://127.0.0.1:8080"},
		}}},
		{name: "bad yaml", content: "contexts: [name: x\n", wantErr: "argosy config file " + filepath.Join(dir, "bad yaml") + ": "},
		{name: "wrong shape", content: "contexts: prod\n", wantErr: "argosy config file " + filepath.Join(dir, "wrong shape") + ": "},
		{name: "unnamed", content: "contexts:\n- server: http://x\n", wantErr: "context 1 has no name"},
		{name: "twice", content: "contexts:\n- name: a\n- name: a\n", wantErr: `context "a" is there twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := config.Load(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want one naming %s and holding %q", err, path, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSave checks that Save writes a file only its owner reads, in a
// directory only its owner enters, that Load reads back, and that saving
// again over a file anyone could read leaves it 0600 too.
func TestSave(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "argosy")
	path := filepath.Join(dir, "config.yaml")
	c := &config.Config{CurrentContext: "prod", Contexts: []config.Context{{Name: "prod", Server: "https://hub", Token: "t"}}}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	checkMode(t, dir, 0o700|os.ModeDir)
	checkMode(t, path, 0o600)
	got, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got); diff != "" {
		t.Errorf("Load after Save (-want +got):\n%s", diff)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	c.Set(config.Context{Name: "dev", Server: "http://127.0.0.1:8080"})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	checkMode(t, path, 0o600)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v (%v), want the config file alone: no temporary file left", entries, err)
	}
}

// TestSaveThroughSymlink checks that a config file that is a symbolic link
// (to a dotfiles repository, say) stays one: the file it names is replaced.
func TestSaveThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "real.yaml"), filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	c := &config.Config{Contexts: []config.Context{{Name: "a", Server: "http://a"}}}
	if err := c.Save(link); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symbolic link: %v", link, err)
	}
	if got, err := config.Load(target); err != nil || got.Find("a") == nil {
		t.Errorf("the link's target holds %+v, %v", got, err)
	}
}

func TestSaveRefusesDuplicates(t *testing.T) {
	c := &config.Config{Contexts: []config.Context{{Name: "a"}, {Name: "a"}}}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := c.Save(path); err == nil {
		t.Error("Save of a context named twice succeeded")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Save wrote a file it refused: %v", err)
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModeDir | os.ModePerm); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

// TestContexts checks Find, Current, Set, Delete and Known.
func TestContexts(t *testing.T) {
	c := &config.Config{}
	if x, err := c.Current(); x != nil || err != nil {
		t.Errorf("Current of an empty config: %v, %v", x, err)
	}
	if got := c.Known(); !strings.Contains(got, "argosy login") {
		t.Errorf("Known of an empty config: %q, want it to say how to add one", got)
	}
	c.Set(config.Context{Name: "a", Server: "http://a"})
	c.Set(config.Context{Name: "b", Server: "http://b"})
	c.Set(config.Context{Name: "a", Server: "http://a2", Token: "t"})
	c.CurrentContext = "a"
	if x, err := c.Current(); err != nil || x.Server != "http://a2" || x.Token != "t" {
		t.Errorf("Current: %+v, %v", x, err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, c.Names()); diff != "" {
		t.Errorf("Names: Set must replace in place (-want +got):\n%s", diff)
	}
	if !c.Delete("a") || c.CurrentContext != "" || c.Find("a") != nil {
		t.Errorf("Delete of the current context: %+v", c)
	}
	if c.Delete("nope") {
		t.Error("Delete of no context reported one")
	}
	c.CurrentContext = "gone"
	if _, err := c.Current(); err == nil || !strings.Contains(err.Error(), `"gone" is not in the config: known contexts are b`) {
		t.Errorf("Current naming a missing context: %v", err)
	}
}

// TestLoadLog reads a context's log as docs/replay.md writes one.
func TestLoadLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	doc := `contexts:
  - name: prod
    server: https://hub.example.com
    log:
      kafkaBrokers: kafka-0.kafka:9092,kafka-1.kafka:9092
      topicPrefix: ""
      hubKey: /etc/argosy/hub.pub
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &config.LogAccess{KafkaBrokers: "kafka-0.kafka:9092,kafka-1.kafka:9092", HubKey: "/etc/argosy/hub.pub"}
	if x := c.Find("prod"); x == nil || !cmp.Equal(x.Log, want) {
		t.Errorf("context prod: %+v, want its log %+v", x, want)
	}
	replay, err := os.ReadFile("../../../../docs/replay.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(replay), doc) {
		t.Error("docs/replay.md no longer shows the context this test reads")
	}
}
