import jwt from "jsonwebtoken";

interface Credentials {
  username: string;
  password: string;
}

const secret = process.env.JWT_SECRET ?? "";
const apiKey: string | undefined = process.env.API_KEY;

export function authMiddleware(req: Request, res: Response, next: NextFunction) {
  const token = req.headers.authorization?.split(" ")[1];
  if (!token) return res.status(401).json({ error: "missing token" });
  const payload = jwt.verify(token, secret);
  const accessToken = createAccessToken(payload);
  const refreshToken = createRefreshToken(payload);
  res.locals.auth = { accessToken, refreshToken, tokenType: "Bearer" };
  next();
}

export const passwordPolicy = { minLength: 12, requireDigit: true };
const form = { password: credentials.password, token: csrfToken };
