module github.com/acme/authz

go 1.23

require (
	github.com/golang-jwt/jwt/v5 v5.2.1
	golang.org/x/crypto v0.31.0
	golang.org/x/oauth2 v0.24.0
)
