// Package httpadapter will serve the documented endpoints as one
// http.Handler that a host application mounts on its own mux.
//
// Not built yet: this package holds only its documentation.
package httpadapter
