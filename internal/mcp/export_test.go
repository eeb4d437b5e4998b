package mcp

// Fingerprint exposes how a cache file is tied to a server's config.
var Fingerprint = fingerprint
