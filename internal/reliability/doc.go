// Package reliability holds the fault suite run by scripts/reliability: kill -9
// loops, a concurrent multi-process run and the full-disk case, behind the reliability build tag.
package reliability
