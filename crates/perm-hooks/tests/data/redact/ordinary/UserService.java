package com.acme.users;

public class UserService {
    private final PasswordEncoder passwordEncoder;
    private String password;
    private String apiKey;

    public void setPassword(String password) {
        this.password = passwordEncoder.encode(password);
    }

    public boolean authenticate(String username, String password) {
        String token = tokenService.issue(username);
        return token != null && passwordEncoder.matches(password, this.password);
    }
}
