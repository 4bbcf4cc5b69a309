// Package web is the hub's web dashboard: server-rendered pages over the
// projector's views (the fleet with its freshness, one Application across
// its clusters, the audit timeline, deployment reports), with htmx for
// partial updates and uPlot for charts, every asset embedded in the
// binary. It reads through projector.Query only; it writes nothing itself:
// its write buttons call the hub's own API, which authorizes and audits
// them as it does the CLI's calls. The hub authenticates every page and
// passes the caller in the request's context (WithViewer).
//
// The third-party assets under static/vendor are copies of files of
// published npm packages, pinned with their integrity in
// static/vendor/vendor.json; `go generate` fetches them again and
// TestVendoredAssets holds the embedded files to their checksums.
// testdata/axe holds axe-core, the accessibility checker the browser test
// runs on every page, vendored the same way; it is never served.
package web

//go:generate go run ./internal/vendor -dir static/vendor
//go:generate go run ./internal/vendor -dir testdata/axe
