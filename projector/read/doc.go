// Package read serves the projector's views over HTTP as JSON: the fleet of
// clusters and whether each is connected, Applications' desired and observed
// state, the audit history and the verification of its hash chain,
// deployment records and deployment reports. The API lives under /api/v1/
// and is described by the one OpenAPI 3.1 document of /api/v1,
// schemas.OpenAPI (its operations tagged fleet, audit, deployments and
// meta), which it serves at /api/v1/openapi.yaml.
//
// The handler reads through projector.Query only, so the projector serves
// it and the hub mounts the same handler. The one Go client of /api/v1,
// the read API's calls included, is hub/api's Client; the argosy command
// line uses it.
//
// Package readtest holds an in-memory projector.Query for tests of the API
// and of its clients.
package read
