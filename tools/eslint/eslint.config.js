// ESLint's rules for the JavaScript evaldelta ships (src/evaldelta/*/assets/*.js): the
// HTML report's and the dashboard's scripts. Each runs in the browser on a page that
// works without it (they only enhance), under a Content Security Policy.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["src/evaldelta/*/assets/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser },
    },
    rules: {
      eqeqeq: ["error", "always"],
      "no-var": "error",
      "prefer-const": "error",
      "no-implicit-globals": "error",
      "no-shadow": "error",
      "no-use-before-define": ["error", { functions: false }],
    },
  },
];
