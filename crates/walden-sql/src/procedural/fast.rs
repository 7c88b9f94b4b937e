//! Integer arithmetic and comparisons over variables, evaluated without a
//! SQL statement: a loop's `WHILE @i <= @n` and `SET @i += 1` are most of
//! its statements. Only integers and NULL are taken; anything else (other
//! types, functions, overflow) answers `None` and the runtime evaluates the
//! expression as `SELECT expr`, so results never differ.

use sqlparser::dialect::MsSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use walden_engine::Value;

#[derive(Debug)]
pub enum Fast {
    Int(i64),
    Var(String),
    Neg(Box<Fast>),
    Not(Box<Fast>),
    Bin(Op, Box<Fast>, Box<Fast>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

/// A value while evaluating: an integer, a truth value, or NULL.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum V {
    Int(i64),
    Bool(bool),
    Null,
}

/// Parses `text` if it is such an expression.
pub fn parse(text: &str) -> Option<Fast> {
    let toks: Vec<Token> = Tokenizer::new(&MsSqlDialect {}, text)
        .tokenize()
        .ok()?
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let mut p = P { t: toks, i: 0 };
    let e = p.or()?;
    (p.i == p.t.len()).then_some(e)
}

struct P {
    t: Vec<Token>,
    i: usize,
}

impl P {
    fn peek(&self) -> Option<&Token> {
        self.t.get(self.i)
    }

    fn kw(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
    }

    fn or(&mut self) -> Option<Fast> {
        let mut l = self.and()?;
        while self.kw("OR") {
            self.i += 1;
            l = Fast::Bin(Op::Or, Box::new(l), Box::new(self.and()?));
        }
        Some(l)
    }

    fn and(&mut self) -> Option<Fast> {
        let mut l = self.not()?;
        while self.kw("AND") {
            self.i += 1;
            l = Fast::Bin(Op::And, Box::new(l), Box::new(self.not()?));
        }
        Some(l)
    }

    fn not(&mut self) -> Option<Fast> {
        if self.kw("NOT") {
            self.i += 1;
            return Some(Fast::Not(Box::new(self.not()?)));
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Option<Fast> {
        let l = self.add()?;
        let op = match self.peek() {
            Some(Token::Eq) => Op::Eq,
            Some(Token::Neq) => Op::Ne,
            Some(Token::Lt) => Op::Lt,
            Some(Token::LtEq) => Op::Le,
            Some(Token::Gt) => Op::Gt,
            Some(Token::GtEq) => Op::Ge,
            _ => return Some(l),
        };
        self.i += 1;
        Some(Fast::Bin(op, Box::new(l), Box::new(self.add()?)))
    }

    fn add(&mut self) -> Option<Fast> {
        let mut l = self.mul()?;
        loop {
            let op = match self.peek() {
                Some(Token::Plus) => Op::Add,
                Some(Token::Minus) => Op::Sub,
                _ => return Some(l),
            };
            self.i += 1;
            l = Fast::Bin(op, Box::new(l), Box::new(self.mul()?));
        }
    }

    fn mul(&mut self) -> Option<Fast> {
        let mut l = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Token::Mul) => Op::Mul,
                Some(Token::Div) => Op::Div,
                Some(Token::Mod) => Op::Mod,
                _ => return Some(l),
            };
            self.i += 1;
            l = Fast::Bin(op, Box::new(l), Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> Option<Fast> {
        match self.peek()?.clone() {
            Token::Minus => {
                self.i += 1;
                Some(Fast::Neg(Box::new(self.unary()?)))
            }
            Token::Number(n, _) => {
                self.i += 1;
                // Only plain integers: 1.5 and 1e3 are other types.
                n.parse::<i64>().ok().map(Fast::Int)
            }
            Token::Word(w)
                if w.quote_style.is_none()
                    && w.value.starts_with('@')
                    && !w.value.starts_with("@@") =>
            {
                self.i += 1;
                Some(Fast::Var(w.value.to_ascii_lowercase()))
            }
            Token::LParen => {
                self.i += 1;
                let e = self.or()?;
                if !matches!(self.peek(), Some(Token::RParen)) {
                    return None;
                }
                self.i += 1;
                Some(e)
            }
            _ => None,
        }
    }
}

impl Fast {
    /// The value, or `None` when SQL must answer (a variable that is not an
    /// integer, overflow, division by zero: SQL's error is the answer).
    pub fn eval(&self, var: &dyn Fn(&str) -> Option<Value>) -> Option<V> {
        Some(match self {
            Fast::Int(i) => V::Int(*i),
            Fast::Var(n) => match var(n)? {
                Value::Int(i) => V::Int(i),
                Value::Null => V::Null,
                _ => return None,
            },
            Fast::Neg(e) => match e.eval(var)? {
                V::Int(i) => V::Int(i.checked_neg()?),
                V::Null => V::Null,
                V::Bool(_) => return None,
            },
            Fast::Not(e) => match e.eval(var)? {
                V::Bool(b) => V::Bool(!b),
                V::Null => V::Null,
                V::Int(_) => return None,
            },
            Fast::Bin(op @ (Op::And | Op::Or), l, r) => {
                let (l, r) = (l.eval(var)?, r.eval(var)?);
                let b = |v: V| match v {
                    V::Bool(b) => Some(Some(b)),
                    V::Null => Some(None),
                    V::Int(_) => None,
                };
                match (op, b(l)?, b(r)?) {
                    (Op::And, Some(false), _) | (Op::And, _, Some(false)) => V::Bool(false),
                    (Op::And, Some(true), Some(true)) => V::Bool(true),
                    (Op::Or, Some(true), _) | (Op::Or, _, Some(true)) => V::Bool(true),
                    (Op::Or, Some(false), Some(false)) => V::Bool(false),
                    _ => V::Null,
                }
            }
            Fast::Bin(op, l, r) => {
                let (a, b) = match (l.eval(var)?, r.eval(var)?) {
                    (V::Int(a), V::Int(b)) => (a, b),
                    (V::Null, V::Int(_) | V::Null) | (V::Int(_), V::Null) => return Some(V::Null),
                    _ => return None,
                };
                match op {
                    Op::Add => V::Int(a.checked_add(b)?),
                    Op::Sub => V::Int(a.checked_sub(b)?),
                    Op::Mul => V::Int(a.checked_mul(b)?),
                    Op::Div => V::Int(a.checked_div(b)?),
                    Op::Mod => V::Int(a.checked_rem(b)?),
                    Op::Eq => V::Bool(a == b),
                    Op::Ne => V::Bool(a != b),
                    Op::Lt => V::Bool(a < b),
                    Op::Le => V::Bool(a <= b),
                    Op::Gt => V::Bool(a > b),
                    Op::Ge => V::Bool(a >= b),
                    Op::And | Op::Or => unreachable!("handled above"),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str, i: Option<i64>) -> Option<V> {
        let f = parse(s)?;
        f.eval(&|n: &str| match n {
            "@i" => Some(i.map(Value::Int).unwrap_or(Value::Null)),
            "@t" => Some(Value::text("x")),
            _ => None,
        })
    }

    #[test]
    fn integer_expressions() {
        assert_eq!(ev("@i <= 10000", Some(5)), Some(V::Bool(true)));
        assert_eq!(ev("@i + (1)", Some(5)), Some(V::Int(6)));
        assert_eq!(ev("(@i - 1) * 2 % 4", Some(4)), Some(V::Int(2)));
        assert_eq!(ev("@i > 1 AND NOT @i = 3", Some(5)), Some(V::Bool(true)));
        assert_eq!(ev("@i > 1 OR 1 = 1", None), Some(V::Bool(true)));
        assert_eq!(ev("@i > 1 AND 1 = 1", None), Some(V::Null));
        // SQL answers these.
        assert_eq!(ev("@i / 0", Some(1)), None);
        assert_eq!(ev("@t + 1", Some(1)), None);
        assert_eq!(ev("1.5 + @i", Some(1)), None);
        assert_eq!(ev("@x + 1", Some(1)), None);
        assert!(parse("count(*)").is_none());
        assert!(parse("@i = 1 SELECT").is_none());
    }
}
