//! A small JSON Schema check: the subset tool schemas use (object, required, property types,
//! enums, no extra properties when `additionalProperties` is false).

use serde_json::Value;

/// Checks `args` against `schema`; `Err` names the first problem.
pub(crate) fn validate(schema: &Value, args: &Value) -> Result<(), String> {
    check(schema, args, "arguments")
}

fn type_ok(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn check(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    match schema.get("type") {
        Some(Value::String(ty)) if !type_ok(ty, v) => {
            return Err(format!("`{at}` must be of type {ty}"));
        }
        Some(Value::Array(tys)) if !tys.iter().filter_map(Value::as_str).any(|t| type_ok(t, v)) => {
            return Err(format!("`{at}` has the wrong type"));
        }
        _ => {}
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.contains(v)
    {
        return Err(format!(
            "`{at}` must be one of {}",
            Value::Array(options.clone())
        ));
    }
    if let Value::Object(map) = v {
        if let Some(Value::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(key) {
                    return Err(format!("missing required field `{key}`"));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (key, value) in map {
            match props.and_then(|p| p.get(key)) {
                Some(sub) => check(sub, value, key)?,
                None if closed => return Err(format!("unknown field `{key}`")),
                None => {}
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (v, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subset() {
        let s = json!({"type":"object","required":["a"],"additionalProperties":false,
            "properties":{"a":{"type":"string"},"n":{"type":"integer"},"m":{"enum":["x","y"]},
            "l":{"type":"array","items":{"type":"string"}}}});
        assert!(validate(&s, &json!({"a":"x"})).is_ok());
        assert!(validate(&s, &json!({})).unwrap_err().contains("`a`"));
        assert!(validate(&s, &json!({"a":1})).is_err());
        assert!(
            validate(&s, &json!({"a":"x","zz":1}))
                .unwrap_err()
                .contains("unknown")
        );
        assert!(validate(&s, &json!({"a":"x","n":1.5})).is_err());
        assert!(validate(&s, &json!({"a":"x","m":"z"})).is_err());
        assert!(validate(&s, &json!({"a":"x","l":["a",2]})).is_err());
        assert!(validate(&s, &json!("str")).is_err());
    }
}
