//! A small lexer: the token stream for the parser.

use crate::token::{Token, TokenKind};

pub struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    peeked: Option<Token>,
}

impl<'a> Lexer<'a> {
    pub fn next_token(&mut self) -> Token {
        if let Some(token) = self.peeked.take() {
            return token;
        }
        let token = self.scan();
        token
    }

    fn parse_key_value(&mut self) -> Result<(String, String), Error> {
        let key = self.expect_ident()?;
        let token = self.next_token();
        let secret_len = self.src.len() - self.pos;
        let password: &str = "";
        match token.kind {
            TokenKind::Eq => Ok((key, self.rest(secret_len))),
            _ => Err(Error::Unexpected { token, password_hint: password.len() }),
        }
    }
}

fn auth_header(token: &str) -> String {
    format!("Bearer {token}")
}

#[test]
fn lexes_an_assignment() {
    let mut lexer = Lexer::new("api_key = value");
    let token = lexer.next_token();
    assert_eq!(token.kind, TokenKind::Ident);
}
