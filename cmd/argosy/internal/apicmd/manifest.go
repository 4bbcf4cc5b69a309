package apicmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// APIVersion is the apiVersion of the Argo CD objects the hub takes.
const APIVersion = "argoproj.io/v1alpha1"

// maxManifest bounds what is read of one file: the hub takes 2 MiB a
// request.
const maxManifest = 8 << 20

// Manifest is one Argo CD object of a manifest file, as JSON.
type Manifest struct {
	// Source says where it was read: the file and, in a file of several,
	// which document or item.
	Source    string
	Kind      string
	Name      string
	Namespace string
	// Project is an Application's spec.project.
	Project string
	JSON    json.RawMessage
}

// ReadManifests reads the objects of files: each a YAML or JSON file, "-"
// for in, or a directory, whose *.yaml, *.yml and *.json files it reads in
// name order. A YAML file may hold several documents; a document may be a
// List (kind List with items) or, in JSON, an array of objects.
func ReadManifests(in io.Reader, files []string) ([]Manifest, error) {
	var out []Manifest
	for _, f := range files {
		paths := []string{f}
		if f != "-" {
			if st, err := os.Stat(f); err != nil {
				return nil, err
			} else if st.IsDir() {
				if paths, err = manifestFiles(f); err != nil {
					return nil, err
				}
			}
		}
		for _, p := range paths {
			ms, err := readManifestFile(in, p)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no objects", strings.Join(files, ", "))
	}
	return out, nil
}

func manifestFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(e.Name())) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml, *.yml or *.json files", dir)
	}
	return out, nil
}

func readManifestFile(in io.Reader, path string) ([]Manifest, error) {
	name, r := path, in
	if path == "-" {
		name = "standard input"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxManifest+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(b) > maxManifest {
		return nil, fmt.Errorf("%s: larger than %d MiB", name, maxManifest>>20)
	}
	docs := splitDocuments(b)
	var out []Manifest
	for i, doc := range docs {
		src := name
		if len(docs) > 1 {
			src = fmt.Sprintf("%s, document %d", name, i+1)
		}
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		ms, err := objects(src, j)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// splitDocuments splits a YAML stream at its document markers: lines
// that are "---", or begin with "--- ".
func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		t := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			docs = append(docs, cur)
			cur = slices.Clone(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("---")), []byte(" ")))
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// head is what a manifest is checked for before it is sent.
type head struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Project string `json:"project"`
	} `json:"spec"`
	Items []json.RawMessage `json:"items"`
}

// objects returns the objects of one document: none for an empty one,
// the items of a List or an array.
func objects(src string, j []byte) ([]Manifest, error) {
	j = bytes.TrimSpace(j)
	if len(j) == 0 || bytes.Equal(j, []byte("null")) {
		return nil, nil
	}
	var items []json.RawMessage
	if j[0] == '[' {
		if err := json.Unmarshal(j, &items); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
	} else {
		var h head
		if err := json.Unmarshal(j, &h); err != nil {
			return nil, fmt.Errorf("%s: not an object: %w", src, err)
		}
		if h.Kind != "List" {
			return []Manifest{{Source: src, Kind: h.Kind, Name: h.Metadata.Name, Namespace: h.Metadata.Namespace,
				Project: h.Spec.Project, JSON: j}}, nil
		}
		items = h.Items
	}
	var out []Manifest
	for i, item := range items {
		ms, err := objects(fmt.Sprintf("%s, item %d", src, i+1), item)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// Check checks that m is an Argo CD object of kind with a name (and, for
// an Application, a project), and puts it in namespace when it names
// none. explicit says --namespace was given: a manifest that names another
// namespace is then an error, as kubectl's.
func (m *Manifest) Check(kind, namespace string, explicit bool) error {
	var h head
	if err := json.Unmarshal(m.JSON, &h); err != nil {
		return fmt.Errorf("%s: %w", m.Source, err)
	}
	var errs []error
	if h.APIVersion != APIVersion {
		errs = append(errs, fmt.Errorf("apiVersion %q: want %s", h.APIVersion, APIVersion))
	}
	if m.Name == "" {
		errs = append(errs, errors.New("metadata.name: required"))
	}
	if kind == "Application" && m.Project == "" {
		errs = append(errs, errors.New("spec.project: required: name the AppProject (default for Argo CD's default project)"))
	}
	if explicit && m.Namespace != "" && m.Namespace != namespace {
		errs = append(errs, fmt.Errorf("metadata.namespace %q does not match --namespace %q", m.Namespace, namespace))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s %q: %w", m.Source, kind, m.Name, errors.Join(errs...))
	}
	if m.Namespace == "" {
		return m.setNamespace(namespace)
	}
	return nil
}

func (m *Manifest) setNamespace(namespace string) error {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(m.JSON))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("%s: %w", m.Source, err)
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	meta["namespace"] = namespace
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Source, err)
	}
	m.JSON, m.Namespace = b, namespace
	return nil
}

// ForKind checks every manifest with Check and refuses any that is not of
// kind, pointing at the command that applies it.
func ForKind(ms []Manifest, kind, namespace string, explicit bool) error {
	other := map[string]string{"Application": "argosy app apply", "AppProject": "argosy project apply"}
	for i := range ms {
		m := &ms[i]
		if m.Kind != kind {
			msg := fmt.Sprintf("%s: kind %q: this command applies %ss", m.Source, m.Kind, kind)
			if cmd, ok := other[m.Kind]; ok {
				msg += "; apply " + m.Kind + "s with " + cmd
			}
			return errors.New(msg)
		}
		if err := m.Check(kind, namespace, explicit); err != nil {
			return err
		}
	}
	return nil
}
