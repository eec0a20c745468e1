package dashboard

// LoginClients returns how many clients the login limit holds.
func LoginClients(h *Handler) int { return h.logins.Len() }
