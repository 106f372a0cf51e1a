const { Pool } = require("pg");

const pool = new Pool({
  host: "db.internal",
  user: "reporting",
  password: "eTmFf39soDd1hO",
  database: "reports",
});
module.exports = pool;
